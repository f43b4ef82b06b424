"""KubeDirectorCluster health from KubeDirector's status: cluster state, member states and the rollup."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.health._fields import being_deleted, items, section, text
from gitops_kd.health.model import Health, HealthStatus
from gitops_kd.kd.layout import (
    CONFIGURED,
    CREATING,
    DOWN_CONTAINER_STATES,
    MEMBER_CONFIG_ERROR,
    SPEC_MODIFIED,
    UPDATING,
)

MEMBERS_DOWN = "members down: "


def _members(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [m for role in items(status, "roles") for m in items(role, "members")]


def _config_errors(status: Mapping[str, Any]) -> list[str]:
    out = []
    for m in _members(status):
        if text(m, "state") == MEMBER_CONFIG_ERROR:
            detail = text(section(m, "stateDetail"), "configErrorDetail")
            out.append(f"{text(m, 'pod')}" + (f" ({detail})" if detail else ""))
    return out


def _down(status: Mapping[str, Any]) -> list[str]:
    return [
        f"{text(m, 'pod')} ({text(section(m, 'stateDetail'), 'lastKnownContainerState')})"
        for m in _members(status)
        if text(section(m, "stateDetail"), "lastKnownContainerState") in DOWN_CONTAINER_STATES
        and text(m, "state") not in ("create pending", "delete pending", "deleting")
    ]


def _unscheduled(status: Mapping[str, Any]) -> list[str]:
    return [
        f"{text(m, 'pod')}: {text(section(m, 'stateDetail'), 'schedulingErrorMessage')}"
        for m in _members(status)
        if text(section(m, "stateDetail"), "schedulingErrorMessage")
    ]


def _progress(status: Mapping[str, Any]) -> str:
    """Which members are not configured yet, by state: "creating: kdss-x-0; create pending: kdss-y-0"."""
    by_state: dict[str, list[str]] = {}
    for m in _members(status):
        if text(m, "state") != CONFIGURED:
            by_state.setdefault(text(m, "state") or "unknown", []).append(text(m, "pod"))
    return "; ".join(f"{state}: {', '.join(pods)}" for state, pods in by_state.items())


def kdcluster_health(obj: Mapping[str, Any]) -> Health:
    """Health of a kubedirector.hpe.com KubeDirectorCluster.

    KubeDirector has no cluster-level error state: errors show in the members. Members in "config error"
    (memberStateRollup.configErrors) or a restore error → Degraded; state configured or updating with a member's
    container down (terminated / unresponsive / absent) → Degraded; configured → Healthy; creating, updating and
    "spec modified" → Progressing (naming the members not configured yet); no state yet → Progressing;
    any other state → Unknown.
    """
    if being_deleted(obj):
        return Health(HealthStatus.PROGRESSING, "Pending deletion")
    status = section(obj, "status")
    state = text(status, "state")
    restore_error = text(section(status, "restoreProgress"), "error")
    if restore_error:
        return Health(HealthStatus.DEGRADED, f"restore failed: {restore_error}")
    errors = _config_errors(status)
    if errors or section(status, "memberStateRollup").get("configErrors"):
        return Health(HealthStatus.DEGRADED, "members in config error: " + (", ".join(errors) or "(see status.roles)"))
    if not state:
        return Health(HealthStatus.PROGRESSING, "Waiting for KubeDirector to report the cluster state")
    members = _members(status)
    down = _down(status) if state in (CONFIGURED, UPDATING) else []
    if down:  # updating too: KubeDirector's notify or reconfigure left members down (a rollout's are Progressing)
        return Health(HealthStatus.DEGRADED, f"{state}: " + MEMBERS_DOWN + ", ".join(down))
    if state == CONFIGURED:
        return Health(HealthStatus.HEALTHY, f"configured: {len(members)} members ready")
    if state in (CREATING, UPDATING, SPEC_MODIFIED):
        detail = "; ".join(p for p in (_progress(status), "; ".join(_unscheduled(status))) if p)
        return Health(HealthStatus.PROGRESSING, state + (f" ({detail})" if detail else ""))
    return Health(HealthStatus.UNKNOWN, f"unknown KubeDirector cluster state {state!r}")
