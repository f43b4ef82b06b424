"""plan() of a cluster whose pods all run the version while KubeDirector does not report it ready (issue 42, 1):
Ready is taken away (Reconciling, KubeDirector's words), Stalled at once for a member in config error and after
podReadyTimeoutSeconds otherwise, and given back by FinishRollout once KubeDirector reports the cluster configured."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from gitops_kd.observed import ObservedCluster
from gitops_kd.plan import actions as A
from gitops_kd.plan import plan
from gitops_kd.spec.freeze import thaw
from gitops_kd.spec.upgrade import DEFAULT_POD_READY_TIMEOUT
from plan.kdworld import HELLO1, HELLO_DEV, T0, desired, live_cluster, observed, with_rollout

READY = ({"type": "Ready", "status": "True", "reason": "UpToDate", "message": "m"},)


def _kd(c: ObservedCluster, cluster_state: str, **member: Any) -> ObservedCluster:
    """The KDCluster's status as KubeDirector writes it: ``cluster_state``, one member of role worker as ``member``
    says."""
    raw = thaw(c.raw)
    raw["status"] = {
        "state": cluster_state,
        "roles": [{"id": "worker", "members": [{"pod": "kdss-worker-0", "state": "configured", **member}]}],
    }
    return replace(c, raw=raw, kd_state=cluster_state)


def _marked(c: ObservedCluster, message: str, *, stalled: bool = False, since: str = "2024-01-01T00:00:00Z") -> ObservedCluster:
    kd = {"type": "KubeDirectorReady", "status": "False", "message": message, "lastTransitionTime": since}
    other = {"type": "Stalled" if stalled else "Reconciling", "status": "True", "message": message}
    raw = {"status": {"message": message}}
    return with_rollout(c, conditions=({"type": "Ready", "status": "False", "message": message}, other, kd), raw=raw)


def _names(p: A.Plan) -> list[str]:
    return [type(a).__name__ for a in p.actions]


def test_kubedirector_not_ready_takes_ready_away_waits_then_stalls_and_gives_it_back() -> None:
    """Invariant: a Ready KDRollout over a cluster KubeDirector reports `updating` with a member unresponsive loses
    Ready at once (Reconciling, not Stalled), with KubeDirector's state and the member; it is marked once; it stalls
    past podReadyTimeoutSeconds since the mark; FinishRollout gives Ready back once KubeDirector says configured."""
    want = desired(HELLO1, HELLO_DEV)
    ready = with_rollout(live_cluster(HELLO1, HELLO_DEV), conditions=READY)
    down = _kd(ready, "updating", stateDetail={"lastKnownContainerState": "unresponsive"})
    first = plan(want, observed((HELLO1,), (down,)), now=T0)
    assert _names(first) == ["MarkKubeDirectorNotReady", "Wait"], first.describe()
    mark = first.actions[0]
    assert isinstance(mark, A.MarkKubeDirectorNotReady) and not mark.stalled
    assert mark.message == "KubeDirector reports the cluster updating (member containers down: kdss-worker-0 (unresponsive))"

    since = T0 - timedelta(seconds=10)
    marked = _marked(down, mark.message, since=since.strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert _names(plan(want, observed((HELLO1,), (marked,)), now=T0)) == ["Wait"]  # said once
    late = plan(want, observed((HELLO1,), (marked,)), now=since + timedelta(seconds=DEFAULT_POD_READY_TIMEOUT + 1))
    assert _names(late) == ["MarkKubeDirectorNotReady", "Wait"], late.describe()
    stall = late.actions[0]
    assert isinstance(stall, A.MarkKubeDirectorNotReady) and stall.stalled
    assert stall.message.startswith(mark.message) and f"{DEFAULT_POD_READY_TIMEOUT}s (podReadyTimeoutSeconds)" in stall.message

    back = _kd(_marked(down, stall.message, stalled=True), "configured", stateDetail={"lastKnownContainerState": "running"})
    done = plan(want, observed((HELLO1,), (back,)), now=T0)
    assert _names(done) == ["FinishRollout"], done.describe()


def test_a_member_in_config_error_stalls_at_once_with_kubedirectors_detail() -> None:
    """Invariant: KubeDirector's own error (a member in config error) is Stalled at once, naming the member and
    KubeDirector's configErrorDetail; Ready is never claimed meanwhile."""
    ready = with_rollout(live_cluster(HELLO1, HELLO_DEV), conditions=READY)
    broken = _kd(ready, "configured", state="config error", stateDetail={"configErrorDetail": "configure exited 127"})
    p = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (broken,)), now=T0)
    assert _names(p) == ["MarkKubeDirectorNotReady", "Wait"], p.describe()
    mark = p.actions[0]
    assert isinstance(mark, A.MarkKubeDirectorNotReady) and mark.stalled
    assert mark.message == "KubeDirector reports members in config error: kdss-worker-0 (configure exited 127)"
