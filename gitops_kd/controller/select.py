"""Which planned action to execute now: the first one not behind a Wait of its cluster nor on hold (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gitops_kd.plan.actions import Action, Plan, RecordStages, RecordUnreachable, Wait

Hold = Mapping[Action, float]
"""Actions that must not run again before a monotonic deadline (a gate probe that just failed)."""


@dataclass(frozen=True)
class Selection:
    """The action to run now (None: nothing runnable) and when to look again if nothing else changes."""

    action: Action | None
    requeue_after: float | None


def select(plan: Plan, hold: Hold, now: float) -> Selection:
    """Walk the plan in order. A Wait blocks the later actions of its cluster (every action when it
    has no cluster); an action on hold counts as a Wait until its deadline. Independent clusters
    make progress while one of them waits."""
    blocked: set[tuple[str, str]] = set()
    all_blocked = False
    requeue: float | None = None
    for action in plan.actions:
        key = action.cluster_key
        if all_blocked or (key is not None and key in blocked):
            continue
        if isinstance(action, Wait):
            requeue = _min(requeue, action.requeue_after_seconds)
            if key is None:
                all_blocked = True
            else:
                blocked.add(key)
            continue
        deadline = hold.get(action)
        if deadline is not None and deadline > now:
            requeue = _min(requeue, deadline - now)
            if isinstance(action, (RecordStages, RecordUnreachable)):
                continue  # a record that failed (its field pruned by an older CRD) never holds the cluster's work
            if key is None:
                all_blocked = True
            else:
                blocked.add(key)
            continue
        return Selection(action, requeue)
    return Selection(None, requeue)


def _min(a: float | None, b: float) -> float:
    return b if a is None else min(a, b)
