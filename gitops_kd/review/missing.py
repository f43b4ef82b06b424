"""The role StatefulSets Git asks for (a role with members) that the cluster lacks, as diff entries (pure)."""

from __future__ import annotations

from collections.abc import Mapping

from gitops_kd.diff.engine import app_for
from gitops_kd.kd.layout import STATEFULSET_KIND as STATEFULSET
from gitops_kd.observed import ObservedState
from gitops_kd.review.livediff import ObjectDiff
from gitops_kd.spec.state import DesiredState


def missing_statefulsets(desired: DesiredState, observed: ObservedState) -> list[ObjectDiff]:
    """One entry per role with members in Git whose StatefulSet is absent from a live KDCluster (KubeDirector
    creates it; deleted out of band, e.g. `kubectl delete sts --cascade=orphan`, it is missing until then). The
    name is the one KubeDirector's status records for the role, else "<cluster>/<role>"."""
    out = []
    for key, cluster in desired.clusters.items():
        live = observed.clusters.get(key)
        found = app_for(desired, key, cluster) if live is not None else None
        if live is None or found is None:
            continue  # a KDCluster not created yet: its own diff entry says so
        app = found[1]
        recorded = {
            str(r.get("id")): str(r.get("statefulSet") or "")
            for r in ((live.raw.get("status") or {}).get("roles") or ())
            if isinstance(r, Mapping)
        }
        for role in cluster.roles:
            if role.id in app.role_ids and role.members_for(app.role(role.id)) and live.statefulset(role.id) is None:
                name = recorded.get(role.id) or f"{live.name}/{role.id}"
                out.append(
                    ObjectDiff(
                        STATEFULSET,
                        live.namespace,
                        name,
                        create=True,
                        note=f"cluster {live.name}, role {role.id}: missing; KubeDirector creates it",
                    )
                )
    return out
