"""A role StatefulSet deleted out of band takes Ready away from the KDRollout, against the embedded cluster."""

from __future__ import annotations

from typing import Any

from gitops_kd.constants import ROLLOUT_API_VERSION, ROLLOUT_PLURAL
from gitops_kd.kd.layout import CLUSTER_LABEL
from gitops_kd.status import conditions as cond
from gitops_kd.testing import wait_for
from tests.e2e.harness import E2E, NS, WriteLog


def test_ready_is_withdrawn_while_a_role_statefulset_is_gone(e2e: E2E) -> None:
    """Invariant (issue 28, 8): Ready means every StatefulSet Git asks for exists: after `kubectl delete sts
    --cascade=orphan` (pods left running) the KDRollout is no longer Ready (Reconciling, StatefulSetMissing)."""
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    [sts] = [
        s["metadata"]["name"]
        for s in e2e.rest.list("apps/v1", "statefulsets", NS)["items"]
        if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
    ]
    assert e2e.kubectl("delete", "statefulset", sts, "--cascade=orphan").returncode == 0

    def withdrawn() -> dict[str, Any] | None:
        status = (e2e.rollout() or {}).get("status") or {}
        conditions = status.get("conditions")
        return status if not cond.is_true(conditions, cond.READY) and cond.is_true(conditions, cond.RECONCILING) else None

    status = wait_for("Ready withdrawn", withdrawn, 30)
    assert "role worker is missing" in status["message"], status


def test_a_statefulset_stripped_of_its_cluster_label_stays_observed_and_gets_it_back(e2e: E2E) -> None:
    """Invariant (issue 28, 4, without the admission webhook): a role StatefulSet whose kdcluster label is removed
    out of band is still the cluster's (KubeDirector's controller ownerReference): it is never taken for missing
    (no write ever takes Ready away) and the label is put back."""
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    [sts] = [
        s["metadata"]["name"]
        for s in e2e.rest.list("apps/v1", "statefulsets", NS)["items"]
        if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
    ]
    rollouts = WriteLog(e2e.rest, ROLLOUT_API_VERSION, ROLLOUT_PLURAL)
    try:
        assert e2e.kubectl("label", "statefulset", sts, f"{CLUSTER_LABEL}-").returncode == 0
        wait_for(
            "the kdcluster label put back",
            lambda: (
                (e2e.rest.get("apps/v1", "statefulsets", NS, sts)["metadata"].get("labels") or {}).get(CLUSTER_LABEL)
                == "hello-dev"
            ),
            30,
        )
        assert (
            rollouts.first("hello-dev", lambda o: not cond.is_true((o.get("status") or {}).get("conditions"), cond.READY)) is None
        ), "Ready was never taken away"
    finally:
        rollouts.stop()
