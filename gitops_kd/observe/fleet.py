"""Reads the managed fleet from the API server with a fixed number of LIST calls: every KDRollout, KDCluster
and their member objects (StatefulSets, Pods, Services, PVCs), and the health of each cluster.

One code path for `gitops-kd status` and the web UI (gitops_kd/server/ui): ``fetch`` does the I/O,
``healths`` is pure (gitops_kd.health.cluster_health per cluster). With ``tolerate_forbidden`` a member
kind the caller may not list (RBAC 403) is left empty and named in ``Fleet.forbidden`` instead of failing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException

from gitops_kd.constants import ROLLOUT_API_VERSION, ROLLOUT_PLURAL
from gitops_kd.health import ClusterHealth, cluster_health
from gitops_kd.health.service import LB_REQUIRE
from gitops_kd.kd import layout
from gitops_kd.spec.state import Key
from kubeplumb.rest import RestClient

MEMBER_KINDS = (
    ("statefulsets", "apps/v1", "statefulsets"),
    ("pods", "v1", "pods"),
    ("services", "v1", "services"),
    ("pvcs", "v1", "persistentvolumeclaims"),
)

Obj = dict[str, Any]


def key_of(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


@dataclass
class Fleet:
    """Raw objects of the managed KDClusters, by (namespace, cluster); ``keys`` sorted."""

    keys: list[Key]
    rollouts: dict[Key, Obj]
    kdclusters: dict[Key, Obj]
    members: dict[str, dict[Key, list[Obj]]]  # member kind field -> cluster -> objects
    forbidden: list[str] = field(default_factory=list)  # "<plural>" the client may not list

    def objects(self, key: Key) -> dict[str, list[Obj]]:
        return {kind: list(self.members.get(kind, {}).get(key, [])) for kind, _a, _p in MEMBER_KINDS}


def _forbidden(exc: ApiException) -> bool:
    return exc.status in (401, 403)


def _list(
    rest: RestClient,
    api_version: str,
    plural: str,
    namespace: str | None,
    *,
    selector: str | None,
    tolerate: bool,
    forbidden: list[str],
) -> list[Obj]:
    try:
        return list(rest.list(api_version, plural, namespace, label_selector=selector).get("items") or [])
    except ApiException as exc:
        if tolerate and _forbidden(exc):
            forbidden.append(plural)
            return []
        raise


def _unlabelled_pvcs(rest: RestClient, kdcluster: Obj | None, found: list[Obj]) -> list[Obj]:
    """PVCs KubeDirector's status names that the label selector did not return (fetched one by one)."""
    namespace, _ = key_of(kdcluster or {})
    have = {(o.get("metadata") or {}).get("name") for o in found}
    names = [
        m.get("pvc")
        for r in ((kdcluster or {}).get("status") or {}).get("roles") or []
        for m in r.get("members") or []
        if m.get("pvc") and m.get("pvc") not in have
    ]
    return [obj for n in names if (obj := rest.get_or_none("v1", "persistentvolumeclaims", namespace, n)) is not None]


def fetch(rest: RestClient, namespace: str | None, name: str | None = None, *, tolerate_forbidden: bool = False) -> Fleet:
    """Every managed KDCluster in ``namespace`` (None: all) with its objects, or the one named ``name``
    (also when it has no KDRollout)."""
    forbidden: list[str] = []
    selector = f"{layout.CLUSTER_LABEL}={name}" if name else layout.CLUSTER_LABEL
    if name:
        rollout = rest.get_or_none(ROLLOUT_API_VERSION, ROLLOUT_PLURAL, namespace, name)
        rollouts = {key_of(rollout): rollout} if rollout else {}
        found = rest.get_or_none(layout.API_VERSION, layout.KDCLUSTER_PLURAL, namespace, name)
        kdclusters = {key_of(found): found} if found else {}
    else:
        rollouts = {key_of(o): o for o in rest.list(ROLLOUT_API_VERSION, ROLLOUT_PLURAL, namespace).get("items") or []}
        kdclusters = {key_of(o): o for o in rest.list(layout.API_VERSION, layout.KDCLUSTER_PLURAL, namespace).get("items") or []}
    keys = sorted(set(rollouts) | (set(kdclusters) if name else set()))
    members: dict[str, dict[Key, list[Obj]]] = {}
    for kind, api_version, plural in MEMBER_KINDS:
        grouped: dict[Key, list[Obj]] = defaultdict(list)
        for obj in _list(
            rest, api_version, plural, namespace, selector=selector, tolerate=tolerate_forbidden, forbidden=forbidden
        ):
            meta = obj.get("metadata") or {}
            grouped[(meta.get("namespace") or "", (meta.get("labels") or {}).get(layout.CLUSTER_LABEL, ""))].append(obj)
        members[kind] = grouped
    if "persistentvolumeclaims" not in forbidden:
        for key in keys:
            pvcs = members["pvcs"].setdefault(key, [])
            try:
                pvcs.extend(_unlabelled_pvcs(rest, kdclusters.get(key), pvcs))
            except ApiException as exc:
                if not (tolerate_forbidden and _forbidden(exc)):
                    raise
                forbidden.append("persistentvolumeclaims (get)")
                break
    return Fleet(keys, rollouts, kdclusters, members, forbidden)


def healths(fleet: Fleet, loadbalancer: str = LB_REQUIRE) -> list[ClusterHealth]:
    """The ClusterHealth of each cluster of the fleet, in key order (pure); a member kind the reader may not list
    is Unknown there, never Missing; ``loadbalancer``: how a LoadBalancer Service without an ingress counts."""
    unreadable = {f.split(" ")[0] for f in fleet.forbidden}
    return [
        cluster_health(fleet.rollouts.get(key), fleet.kdclusters.get(key), unreadable, loadbalancer, **fleet.objects(key))
        for key in fleet.keys
    ]


def collect(rest: RestClient, namespace: str | None, name: str | None = None) -> list[ClusterHealth]:
    """The health of each managed KDCluster in `namespace` (None: all), or of the one named `name`
    (also when it has no KDRollout). A fixed number of LIST calls, whatever the number of clusters."""
    return healths(fetch(rest, namespace, name))
