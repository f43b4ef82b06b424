"""A role StatefulSet deleted out of band takes Ready away from the KDRollout, against the embedded cluster."""

from __future__ import annotations

from typing import Any

from gitops_kd.status import conditions as cond
from gitops_kd.testing import wait_for
from tests.e2e.harness import E2E, NS


def test_ready_is_withdrawn_while_a_role_statefulset_is_gone(e2e: E2E) -> None:
    """Invariant (issue 28, 8): Ready means every StatefulSet Git asks for exists: after `kubectl delete sts
    --cascade=orphan` (pods left running) the KDRollout is no longer Ready (Reconciling, StatefulSetMissing)."""
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    [sts] = [s["metadata"]["name"] for s in e2e.rest.list("apps/v1", "statefulsets", NS)["items"]
             if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"]
    assert e2e.kubectl("delete", "statefulset", sts, "--cascade=orphan").returncode == 0

    def withdrawn() -> dict[str, Any] | None:
        status = (e2e.rollout() or {}).get("status") or {}
        conditions = status.get("conditions")
        return status if not cond.is_true(conditions, cond.READY) and cond.is_true(
            conditions, cond.RECONCILING) else None
    status = wait_for("Ready withdrawn", withdrawn, 30)
    assert "role worker is missing" in status["message"], status
