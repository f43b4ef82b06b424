"""labels_to_restore: KubeDirector's labels a role StatefulSet lost or had changed out of band (pure)."""

from __future__ import annotations

from gitops_kd.kd.layout import CLUSTER_LABEL, ROLE_LABEL
from gitops_kd.observed import ObservedCluster


def labels_to_restore(live: ObservedCluster, role: str) -> tuple[tuple[str, str], ...]:
    """(key, value) of KubeDirector's cluster and role labels the role's StatefulSet lacks or has another value
    for; () when it has them (or no object was read). The StatefulSet is found by its ownerReference
    (observe/index.owner_of), its role from KubeDirector's status: a changed role label does not move it."""
    sts = live.statefulset(role)
    meta = (sts.raw.get("metadata") or {}) if sts is not None else {}
    if not meta:
        return ()
    have = meta.get("labels") or {}
    want = ((CLUSTER_LABEL, live.name), (ROLE_LABEL, role))
    return tuple((k, v) for k, v in want if have.get(k) != v)


__all__ = ["labels_to_restore"]
