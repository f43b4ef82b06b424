"""The KDClusters gitops-kd could not create (the API server or KubeDirector refuses them) as rows of the fleet:
Missing, saying why, where the cluster would be (pure)."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from gitops_kd.health.cluster import ClusterHealth
from gitops_kd.health.model import Health, HealthStatus
from gitops_kd.kd.layout import KDCLUSTER_KIND

NOT_CREATED = "not created"  # the phase a refused cluster shows


def refused_clusters(
    lines: Iterable[str], known: Collection[tuple[str, str]], namespace: str | None = None
) -> list[ClusterHealth]:
    """A Missing ClusterHealth per "KubeDirectorCluster ns/name: why" line (a GitOpsKDSource's status.applyRefused)
    of a cluster not among ``known`` and in ``namespace`` (None: any), in line order."""
    out: list[ClusterHealth] = []
    for line in lines:
        head, _, why = line.partition(": ")
        kind, _, where = head.partition(" ")
        ns, _, name = where.partition("/")
        if kind != KDCLUSTER_KIND or not name or (ns, name) in known or (namespace is not None and ns != namespace):
            continue
        health = Health(HealthStatus.MISSING, f"KubeDirectorCluster {name} {NOT_CREATED}: {why}")
        out.append(ClusterHealth(ns, name, "", "", "", NOT_CREATED, health))
    return out
