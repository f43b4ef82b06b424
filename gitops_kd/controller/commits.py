"""Commits: what the reconcilers share about Git — the newest accepted commit, the applied one, and when to plan."""

from __future__ import annotations

import threading

from gitops_kd.source import DesiredState


class Commits:
    """``candidate``: the latest commit the Git source accepted; ``applied``: the last whose plan was not refused
    (what is reconciled); ``marked``: the last marked applied in the source's cache. ``polled`` is set by the first
    poll result (no plan from a stale commit before it); ``chosen`` by the first fleet reconcile after it (a part
    plans the commit the fleet chose, never the applied one loaded at start: older than an accepted attempt whose
    KDApp KubeDirector refused, planning it would flip the rollout)."""

    def __init__(self, marked: str | None) -> None:
        self.lock = threading.RLock()
        self.candidate: DesiredState | None = None
        self.applied: DesiredState | None = None
        self.marked = marked
        self.polled = threading.Event()
        self.chosen = threading.Event()

    def current(self) -> DesiredState | None:
        """The applied desired state, read under the lock."""
        with self.lock:
            return self.applied

    def applied_commit(self) -> str | None:
        """The applied commit's sha (None before one is chosen)."""
        applied = self.current()
        return applied.commit if applied is not None else None

    def settled(self) -> bool:
        """The candidate is the applied commit (a poll that found it again has nothing new for the fleet plan)."""
        with self.lock:
            return self.candidate is not None and self.applied is not None and self.candidate.commit == self.applied.commit

    def offer(self, desired: DesiredState) -> bool:
        """A commit the source accepted becomes the candidate; True if it is a new one."""
        with self.lock:
            changed = self.candidate is None or self.candidate.commit != desired.commit
            self.candidate = desired
        return changed
