"""RefusalReporter: a refused commit is logged and reported as Warning Events on the objects its files declare."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from gitops_kd.execute.events import EventRecorder
from gitops_kd.kd.layout import API_VERSION, KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.plan.actions import Plan
from gitops_kd.source import DesiredState, PollResult
from gitops_kd.status.events import COMMIT_REFUSED
from kubeplumb.names import WARNING

log = logging.getLogger(__name__)


class RefusalReporter:
    """Reports each refused commit once (log line per error, one Event per affected object)."""

    def __init__(self, events: EventRecorder, *, on_refused: Callable[[], None] | None = None) -> None:
        self._events = events
        self._on_refused = on_refused
        self._reported: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self.last: tuple[str, tuple[str, ...]] | None = None  # (commit, error lines) of the last refusal

    def source_refused(self, result: PollResult, observed: Any) -> None:
        """The Git source refused the commit (a file does not parse or validate)."""
        if not result.commit or not self._first("source", result.commit):
            return
        lines = tuple(str(e) for e in result.errors)
        self._report(result.commit, lines, ((e.file, str(e)) for e in result.errors), result.desired, observed)

    def plan_refused(self, desired: DesiredState, plan: Plan, observed: Any) -> None:
        """The planner found a forbidden change (distroID, role removal, downgrade, ...)."""
        if not self._first("plan", desired.commit + "|" + "|".join(r.describe() for r in plan.refusals)):
            return
        lines = tuple(r.describe() for r in plan.refusals)
        self._report(desired.commit, lines, ((r.file, r.describe()) for r in plan.refusals), desired, observed)

    def _first(self, kind: str, key: str) -> bool:
        with self._lock:
            if (kind, key) in self._reported:
                return False
            self._reported.add((kind, key))
            return True

    def _report(
        self,
        commit: str,
        lines: tuple[str, ...],
        per_file: Iterable[tuple[str, str]],
        desired: DesiredState | None,
        observed: Any,
    ) -> None:
        self.last = (commit, lines)
        if self._on_refused is not None:
            self._on_refused()
        log.error("commit %s refused; nothing applied, the last applied state stays:\n  %s", commit[:12], "\n  ".join(lines))
        for file, line in per_file:
            for kind, namespace, name in _objects_of_file(desired, file):
                message = f"commit {commit[:12]} refused, nothing applied: {line}"
                live = _live(observed, kind, namespace, name)
                if live is not None:
                    self._events.record(live, COMMIT_REFUSED, message, type_=WARNING)
                else:
                    self._events.record_ref(API_VERSION, kind, namespace, name, COMMIT_REFUSED, message, type_=WARNING)


def _objects_of_file(desired: DesiredState | None, file: str) -> list[tuple[str, str, str]]:
    if desired is None:
        return []
    found = [(KDAPP_KIND, ns, name) for (ns, name), app in desired.apps.items() if app.source == file]
    found += [(KDCLUSTER_KIND, ns, name) for (ns, name), c in desired.clusters.items() if c.source == file]
    return found


def _live(observed: Any, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    if observed is None:
        return None
    table = observed.apps if kind == KDAPP_KIND else observed.clusters
    obj = table.get((namespace, name))
    if obj is None:
        return None
    from gitops_kd.spec.freeze import thaw

    raw: dict[str, Any] = thaw(obj.raw)
    return {**raw, "apiVersion": API_VERSION, "kind": kind}
