"""A first deploy says Ready only once its pods prove the version: every member Git asks for is Ready (issue 12).

Until then its KDRollout exists, Reconciling with reason MembersNotReady, so `kubectl wait` and `gitops-kd status`
show what it waits for."""

from __future__ import annotations

from typing import Any

from gitops_kd.constants import ROLLOUT_API_VERSION, ROLLOUT_PLURAL
from gitops_kd.status import conditions as cond
from gitops_kd.status.rollout import MEMBERS_NOT_READY
from gitops_kd.testing import pod_ready, wait_for
from kdsim import images
from kdsim.images import ImageBehavior
from tests.e2e.harness import E2E, HELLO_1, WriteLog


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return cond.get((obj.get("status") or {}).get("conditions"), kind) or {}


def test_a_first_deploy_says_ready_only_after_every_member_is_ready(e2e: E2E) -> None:
    """Invariant: the KDRollout of a cluster gitops-kd deploys says Ready only after every member pod is Ready,
    judged by the API server's order of writes (resourceVersions), not by when a reader happens to look."""
    images.store_for(e2e.cluster).add("gitops-kd/hello:1.0.0", HELLO_1, behavior=ImageBehavior(ready_delay_seconds=2.0))
    pods = WriteLog(e2e.rest, "v1", "pods")
    rollouts = WriteLog(e2e.rest, ROLLOUT_API_VERSION, ROLLOUT_PLURAL)
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    said = lambda o: _condition(o, cond.READY).get("status") == cond.TRUE  # noqa: E731
    wait_for("the watch delivered the Ready write", lambda: rollouts.first("hello-dev", said) is not None, 30, 0.05)
    pods.stop()
    rollouts.stop()
    names = [p["metadata"]["name"] for p in e2e.pods()]
    assert len(names) == 3, names
    became_ready = [pods.first(name, pod_ready) for name in names]
    assert all(rv is not None for rv in became_ready), dict(zip(names, became_ready, strict=True))
    said_ready = rollouts.first("hello-dev", said)
    assert said_ready is not None and said_ready > max(rv for rv in became_ready if rv is not None)


def test_a_first_deploy_whose_pods_never_get_ready_is_reconciling_and_says_why(e2e: E2E) -> None:
    """Invariant: pods that never get Ready never make a first deploy Ready; its KDRollout says why."""
    images.store_for(e2e.cluster).add("gitops-kd/hello:1.0.0", HELLO_1, behavior=ImageBehavior(never_ready=True))
    e2e.start_controller()

    def reconciling() -> dict[str, Any] | None:
        ro = e2e.rollout()
        return ro if ro is not None and _condition(ro, "Reconciling").get("reason") == MEMBERS_NOT_READY else None

    ro = wait_for("the KDRollout Reconciling while the members start", reconciling, 90)
    assert ro["status"]["phase"] == "Idle" and ro["status"]["appVersion"] == "1.0.0"
    assert _condition(ro, "Ready").get("status") == "False"
    assert "waiting for every member to be Ready" in ro["status"]["message"]
    wait_for("the three members started, none Ready", lambda: len(e2e.pods()) == 3, 60)
    assert not any(pod_ready(p) for p in e2e.pods())
    waited = e2e.kubectl("wait", "--for=condition=Ready", "kdrollout/hello-dev", "--timeout=2s")
    assert waited.returncode != 0 and "timed out" in waited.stderr
