"""PersistentVolumeClaim health: Bound, Pending or Lost."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.health._fields import being_deleted, section, text
from gitops_kd.health.model import Health, HealthStatus


def pvc_health(obj: Mapping[str, Any]) -> Health:
    """Health of a v1 PersistentVolumeClaim by status.phase: Bound → Healthy, Pending → Progressing,
    Lost → Degraded, anything else → Unknown."""
    if being_deleted(obj):
        return Health(HealthStatus.PROGRESSING, "Pending deletion")
    phase = text(section(obj, "status"), "phase")
    volume = text(section(obj, "spec"), "volumeName")
    if phase == "Bound":
        return Health(HealthStatus.HEALTHY, f"bound to volume {volume}" if volume else "bound")
    if phase == "Pending":
        return Health(HealthStatus.PROGRESSING, "waiting for a volume to be bound")
    if phase == "Lost":
        return Health(HealthStatus.DEGRADED, f"the claim lost its volume {volume}".rstrip())
    return Health(HealthStatus.UNKNOWN, f"phase {phase}" if phase else "no phase reported")
