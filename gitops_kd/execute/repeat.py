"""Failures that repeat: a retry delay per failure in a row, and the Stall (one status write, Warning events)."""

from __future__ import annotations

from typing import Any

from gitops_kd.constants import FAILURE_RETRY_CAP, StallReason
from gitops_kd.execute.context import ExecContext, generation, rv
from gitops_kd.status import events as ev
from gitops_kd.status import rollout as rs


def retry_after(failures: int) -> float:
    """Seconds before the next try after ``failures`` in a row: 2, 4, 8, 16, then FAILURE_RETRY_CAP."""
    return min(2.0**failures, FAILURE_RETRY_CAP)


def stall_rollout(
    ctx: ExecContext,
    namespace: str,
    cluster: str,
    obj: dict[str, Any],
    reason: str,
    message: str,
    fields: dict[str, Any],
    failed_reason: str | None = StallReason.STEP_FAILED,
) -> dict[str, Any]:
    """Stall the KDRollout ``obj`` of ``namespace/cluster`` (as read: the write is guarded by its resourceVersion)
    in ONE status write that also sets ``fields``; say so in two Warning events on the KDCluster
    (``failed_reason``, StepFailed by default, with the message unless None, then UpgradeStalled with the
    reason). Returns the written object."""
    if failed_reason is not None:
        ctx.event_on_cluster(namespace, cluster, failed_reason, message, warning=True)
    patch = rs.stall(obj.get("status") or {}, reason=reason, message=message, generation=generation(obj), now=ctx.now())
    patch.update(fields)
    written = ctx.patch_rollout_status(namespace, cluster, patch, rv=rv(obj))
    ctx.event_on_cluster(namespace, cluster, ev.UPGRADE_STALLED, f"{reason}: {message}", warning=True)
    return written
