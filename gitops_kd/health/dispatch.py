"""health_of: the health function for an object's apiVersion/kind (Unknown for kinds without one)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gitops_kd.constants import GROUP, ROLLOUT_KIND
from gitops_kd.health._fields import being_deleted, text
from gitops_kd.health.kdcluster import kdcluster_health
from gitops_kd.health.kdrollout import kdrollout_health
from gitops_kd.health.model import Health, HealthStatus
from gitops_kd.health.pod import pod_health
from gitops_kd.health.pvc import pvc_health
from gitops_kd.health.service import service_health
from gitops_kd.health.statefulset import statefulset_health
from gitops_kd.kd.layout import API_GROUP, KDCLUSTER_KIND

HealthFunc = Callable[[Mapping[str, Any]], Health]

# (API group, kind) -> health function; any version of the group.
CHECKS: Mapping[tuple[str, str], HealthFunc] = {
    ("apps", "StatefulSet"): statefulset_health,
    ("", "Pod"): pod_health,
    ("", "Service"): service_health,
    ("", "PersistentVolumeClaim"): pvc_health,
    (API_GROUP, KDCLUSTER_KIND): kdcluster_health,
    (GROUP, ROLLOUT_KIND): kdrollout_health,
}


def group_of(api_version: str) -> str:
    """ "apps/v1" → "apps"; "v1" → "" (the core group)."""
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def health_of(obj: Mapping[str, Any] | None) -> Health:
    """The health of any object: None → Missing; being deleted → Progressing; by apiVersion/kind, else Unknown."""
    if obj is None:
        return Health(HealthStatus.MISSING, "not found")
    api_version, kind = text(obj, "apiVersion"), text(obj, "kind")
    check = CHECKS.get((group_of(api_version), kind))
    if being_deleted(obj):
        return Health(HealthStatus.PROGRESSING, "Pending deletion")
    if check is None:
        return Health(HealthStatus.UNKNOWN, f"no health check for {kind or '?'} ({api_version or 'no apiVersion'})")
    return check(obj)
