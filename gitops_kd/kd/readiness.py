"""Is a KDCluster ready by KubeDirector's own account (status.state and member states), in its words (pure).

The one rule for Ready (docs/concepts.md, "Ready"): a KDRollout is Ready only when every pod runs the version AND
KubeDirector reports the cluster ready: status.state ``configured`` and every member ``configured`` (KubeDirector's
ready member state), no member container down. A member in ``config error`` or a restore error is KubeDirector's own
failure: ``error`` (Stalled at once); anything else not ready is waited for (Stalled once it lasts too long)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitops_kd.kd.layout import CONFIGURED, DOWN_CONTAINER_STATES, MEMBER_CONFIG_ERROR, MEMBER_LEAVING


@dataclass(frozen=True)
class KDReadiness:
    """KubeDirector's verdict on one cluster: ``ready``, else ``message`` in its words and whether it is an
    ``error`` KubeDirector reports (not something still under way)."""

    ready: bool
    message: str = ""
    error: bool = False


READY = KDReadiness(True)


def _section(obj: Mapping[str, Any] | None, key: str) -> Mapping[str, Any]:
    value = (obj or {}).get(key)
    return value if isinstance(value, Mapping) else {}


def _members(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for role in status.get("roles") or ():
        if isinstance(role, Mapping):
            out += [m for m in role.get("members") or () if isinstance(m, Mapping)]
    return out


def _detail(member: Mapping[str, Any], key: str) -> str:
    return str(_section(member, "stateDetail").get(key) or "")


def kd_readiness(kdcluster: Mapping[str, Any] | None) -> KDReadiness:
    """KubeDirector's verdict on a KDCluster object (its status as KubeDirector wrote it)."""
    status = _section(kdcluster, "status")
    members = _members(status)
    errors = [
        str(m.get("pod", "")) + (f" ({detail})" if (detail := _detail(m, "configErrorDetail")) else "")
        for m in members
        if m.get("state") == MEMBER_CONFIG_ERROR
    ]
    if errors:
        return KDReadiness(False, "KubeDirector reports members in config error: " + ", ".join(errors), True)
    restore = str(_section(status, "restoreProgress").get("error") or "")
    if restore:
        return KDReadiness(False, f"KubeDirector reports a restore error: {restore}", True)
    state = str(status.get("state") or "")
    if not state:
        return KDReadiness(False, "KubeDirector has not reported the cluster's state yet")
    by_state: dict[str, list[str]] = {}
    for m in members:
        member_state = str(m.get("state") or "unknown")
        if member_state != CONFIGURED and member_state not in MEMBER_LEAVING:
            by_state.setdefault(member_state, []).append(str(m.get("pod", "")))
    down = [
        f"{m.get('pod', '')} ({known})"
        for m in members
        if (known := _detail(m, "lastKnownContainerState")) in DOWN_CONTAINER_STATES and m.get("state") == CONFIGURED
    ]
    if state == CONFIGURED and not by_state and not down:
        return READY
    parts = [f"members {s}: {', '.join(pods)}" for s, pods in by_state.items()]
    if down:
        parts.append("member containers down: " + ", ".join(down))
    return KDReadiness(False, f"KubeDirector reports the cluster {state}" + (f" ({'; '.join(parts)})" if parts else ""))
