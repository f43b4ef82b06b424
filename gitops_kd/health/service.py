"""Service health: Healthy, except a LoadBalancer Service still waiting for its ingress."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.health._fields import being_deleted, items, section, text
from gitops_kd.health.model import Health, HealthStatus


def service_health(obj: Mapping[str, Any]) -> Health:
    """Health of a v1 Service: Progressing while type LoadBalancer has no status.loadBalancer.ingress."""
    if being_deleted(obj):
        return Health(HealthStatus.PROGRESSING, "Pending deletion")
    if text(section(obj, "spec"), "type") == "LoadBalancer":
        if not items(section(section(obj, "status"), "loadBalancer"), "ingress"):
            return Health(HealthStatus.PROGRESSING, "Waiting for the load balancer to get an ingress")
    return Health(HealthStatus.HEALTHY)
