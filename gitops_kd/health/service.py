"""Service health: Healthy, except a LoadBalancer Service without an ingress, which counts as the user chose."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.health._fields import being_deleted, items, section, text
from gitops_kd.health.model import Health, HealthStatus

# `--loadbalancer-health`: how a LoadBalancer Service without status.loadBalancer.ingress counts. "require" is
# gitops-engine's rule (pkg/health/health_service.go: Progressing until an ingress is there); "ignore" counts it
# Healthy, for clusters without a load-balancer provider (no cloud, no MetalLB/servicelb), where none ever comes.
LB_REQUIRE, LB_IGNORE = "require", "ignore"
LB_POLICIES = (LB_REQUIRE, LB_IGNORE)
LB_WAITING = (
    "Waiting for the load balancer to get an ingress (KubeDirector makes member Services LoadBalancer unless the "
    "KDCluster's spec.serviceType says otherwise; on a cluster without a load-balancer provider none ever comes: set "
    "spec.serviceType NodePort or ClusterIP in Git, or count it Healthy with --loadbalancer-health=ignore)"
)
LB_IGNORED = "LoadBalancer without an ingress, counted Healthy (--loadbalancer-health=ignore)"


def service_health(obj: Mapping[str, Any], loadbalancer: str = LB_REQUIRE) -> Health:
    """Health of a v1 Service: a LoadBalancer without status.loadBalancer.ingress is Progressing (``loadbalancer``
    "require", saying why and what to do) or Healthy saying so ("ignore"); otherwise Healthy."""
    if being_deleted(obj):
        return Health(HealthStatus.PROGRESSING, "Pending deletion")
    if text(section(obj, "spec"), "type") == "LoadBalancer":
        if not items(section(section(obj, "status"), "loadBalancer"), "ingress"):
            if loadbalancer == LB_IGNORE:
                return Health(HealthStatus.HEALTHY, LB_IGNORED)
            return Health(HealthStatus.PROGRESSING, LB_WAITING)
    return Health(HealthStatus.HEALTHY)
