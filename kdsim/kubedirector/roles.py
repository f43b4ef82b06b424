"""Role membership decisions on KDCluster status, as KubeDirector's roles.go makes them (pure)."""

from __future__ import annotations

from typing import Any

from kdsim.kubedirector.status import (
    CONFIG_ERROR,
    CONFIGURED,
    CREATE_PENDING,
    CREATING,
    DELETE_PENDING,
    DELETING,
    LIVE_STATES,
    all_members_ready,
    new_member,
)


def live_count(role_status: dict[str, Any]) -> int:
    """Members the role's StatefulSet must run (KD's checkMemberCount)."""
    return sum(1 for m in role_status.get("members") or [] if m.get("state") in LIVE_STATES)


def any_creating(roles: list[dict[str, Any]]) -> bool:
    """KD does not resize any role while a member anywhere is being set up."""
    return any(m.get("state") == CREATING for r in roles for m in r.get("members") or [])


def resize(role_status: dict[str, Any], desired: int, has_storage: bool, status: dict[str, Any]) -> bool:
    """Add "create pending" members up to `desired` or mark members past it for deletion; True if changed.

    Expansion waits until earlier deletions are finished (members list length equals the settled count),
    exactly like handleRoleResize; new members take node IDs from status.lastNodeID.
    """
    members: list[dict[str, Any]] = role_status.setdefault("members", [])
    settled = sum(1 for m in members if m.get("state") in (CONFIGURED, CONFIG_ERROR, CREATE_PENDING))
    if desired == settled:
        return False
    if desired > settled:
        if len(members) != settled:
            return False
        for index in range(len(members), desired):
            status["lastNodeID"] = int(status.get("lastNodeID") or 0) + 1
            members.append(new_member(role_status["statefulSet"], index, status["lastNodeID"], has_storage))
        return True
    for member in members[desired:]:
        if member.get("state") == CREATE_PENDING:
            member["state"] = DELETING
        elif member.get("state") in (CONFIGURED, CONFIG_ERROR):
            member["state"] = DELETE_PENDING
    return True


def retire_all(role_status: dict[str, Any]) -> bool:
    """The role's StatefulSet vanished (or the role left the spec): every member goes; True if changed."""
    changed = False
    for member in role_status.get("members") or []:
        state = member.get("state")
        target = DELETE_PENDING if state in (CONFIGURED, CONFIG_ERROR, DELETE_PENDING) else DELETING
        if state != target and state != DELETING:
            member["state"] = target
            changed = True
    return changed


def stable(desired: dict[str, int], roles: list[dict[str, Any]]) -> bool:
    """KD's "members stable and ready": each spec role has exactly its members (by id), all configured."""
    by_id = {r["id"]: r for r in roles}
    if set(by_id) - set(desired):
        return False
    if any(len((by_id.get(rid) or {}).get("members") or []) != n for rid, n in desired.items()):
        return False
    return all_members_ready(roles)
