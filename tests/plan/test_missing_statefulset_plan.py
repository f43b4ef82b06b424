"""plan() of a Ready cluster whose role StatefulSet Git asks for is gone (deleted out of band, or stripped of
KubeDirector's labels): Ready is taken away at once, and given back by FinishRollout once the StatefulSet is back."""

from __future__ import annotations

from dataclasses import replace

from gitops_kd.plan import actions as A
from gitops_kd.plan import plan
from gitops_kd.status.rollout import STATEFULSET_MISSING
from plan.kdworld import HELLO1, HELLO_DEV, T0, desired, live_cluster, observed, with_rollout

READY = ({"type": "Ready", "status": "True", "reason": "UpToDate", "message": "m"},)
MISSING = (
    {"type": "Ready", "status": "False", "reason": STATEFULSET_MISSING, "message": "m"},
    {"type": "Reconciling", "status": "True", "reason": STATEFULSET_MISSING, "message": "m"},
)


def test_a_missing_role_statefulset_takes_ready_away_and_its_return_gives_it_back() -> None:
    """Invariant (issue 28, 8): Ready needs every StatefulSet Git asks for; the plan marks the rollout not Ready
    (MarkMissing first, then a Wait for KubeDirector) and, once the StatefulSet is back, FinishRollout."""
    full = with_rollout(live_cluster(HELLO1, HELLO_DEV), conditions=READY)
    gone = replace(full, statefulsets={r: s for r, s in full.statefulsets.items() if r != "worker"})
    p = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (gone,)), now=T0)
    assert [type(a).__name__ for a in p.actions] == ["MarkMissing", "Wait"], p.describe()
    assert p.actions[0] == A.MarkMissing(gone.namespace, gone.name, "worker")
    marked = with_rollout(gone, conditions=MISSING)
    again = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (marked,)), now=T0)
    assert [type(a).__name__ for a in again.actions] == ["Wait"], again.describe()  # marked once
    back = with_rollout(full, conditions=MISSING)
    done = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (back,)), now=T0)
    assert [type(a).__name__ for a in done.actions] == ["FinishRollout"], done.describe()
