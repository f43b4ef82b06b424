"""Which members a client cannot reach through their own Service, from the observed Services and pods, and the
RecordUnreachable that keeps the KDRollout's status.unreachable equal to it (pure)."""

from __future__ import annotations

from gitops_kd.observed import ObservedCluster
from gitops_kd.plan.actions import RecordUnreachable
from gitops_kd.rollout.model import Unreachable
from gitops_kd.rollout.reach import unreachable_member


def unreachable(live: ObservedCluster) -> tuple[Unreachable, ...]:
    """Members with a running pod (present, not being deleted) whose own Service targets other ports than that
    pod's app container declares, by pod name. A pod being replaced is not listed: it has no server to reach."""
    out: list[Unreachable] = []
    for svc in live.member_services():
        pod = live.pod(svc.pod) if svc.pod else None
        if pod is None or pod.deleting:
            continue
        found = unreachable_member(pod.name, svc.name, svc.ports, pod.ports)
        if found is not None:
            out.append(found)
    return tuple(sorted(out, key=lambda u: u.pod))


def record_unreachable(live: ObservedCluster) -> list[RecordUnreachable]:
    """RecordUnreachable when the KDRollout's status.unreachable differs from what is observed (nothing without
    a KDRollout, and no write while they agree: steady state stays an empty plan)."""
    if live.rollout is None:
        return []
    found = unreachable(live)
    if found == live.rollout.recorded.unreachable:
        return []
    return [RecordUnreachable(live.namespace, live.name, found)]


__all__ = ["record_unreachable", "unreachable"]
