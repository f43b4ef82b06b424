"""KDCluster status bookkeeping like KubeDirector's: member states, container observations, rollup (pure)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any, cast

from kdsim.kubedirector import names

# pkg/controller/kubedirectorcluster/types.go
CLUSTER_CREATING = "creating"
CLUSTER_UPDATING = "updating"
CLUSTER_READY = "configured"

CREATE_PENDING = "create pending"
CREATING = "creating"
CONFIGURED = "configured"
DELETE_PENDING = "delete pending"
DELETING = "deleting"
CONFIG_ERROR = "config error"
LIVE_STATES = (CREATE_PENDING, CREATING, CONFIGURED, CONFIG_ERROR)  # counted in the StatefulSet's replicas

CONTAINER_RUNNING = "running"
CONTAINER_WAITING = "waiting"
CONTAINER_INITIALIZING = "initializing"
CONTAINER_UNRESPONSIVE = "unresponsive"
CONTAINER_TERMINATED = "terminated"
CONTAINER_MISSING = "absent"
CONTAINER_UNKNOWN = "unknown"

NO_PORTS_SERVICE = "n/a"  # KD's member.service when the role exposes no port


def empty_status() -> dict[str, Any]:
    """The status KD starts a new cluster with."""
    return {
        "state": CLUSTER_CREATING,
        "memberStateRollup": rollup([]),
        "generationUID": "",
        "specGenerationToProcess": 0,
        "clusterService": "",
        "lastNodeID": 0,
        "roles": [],
        "lastConnectionHash": "",
    }


def new_member(statefulset: str, index: int, node_id: int, has_storage: bool) -> dict[str, Any]:
    """Status of a member KD has just decided to add (state "create pending")."""
    pod = names.member_pod_name(statefulset, index)
    member: dict[str, Any] = {"pod": pod, "service": "", "nodeID": node_id, "state": CREATE_PENDING, "stateDetail": {}}
    if has_storage:
        member["pvc"] = names.member_pvc_name(pod)
    return member


def app_container_status(pod: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    for cs in ((pod or {}).get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") == names.APP_CONTAINER:
            return cast(Mapping[str, Any], cs)
    return None


def container_id(pod: Mapping[str, Any] | None) -> str:
    """The app container's ID; the pod UID stands in when the kubelet reports none."""
    cs = app_container_status(pod)
    if cs is None:
        return ""
    cid = cs.get("containerID") or ""
    if not cid and (cs.get("state") or {}).get("running") is not None:
        cid = "pod://" + str(((pod or {}).get("metadata") or {}).get("uid", ""))
    return cid


def pod_ready(pod: Mapping[str, Any] | None) -> bool:
    for cond in ((pod or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cast(bool, cond.get("status") == "True")
    return False


def pod_running(pod: Mapping[str, Any] | None) -> bool:
    return ((pod or {}).get("status") or {}).get("phase") == "Running"


def container_state(pod: Mapping[str, Any] | None) -> str:
    """KD's lastKnownContainerState for a member's pod (checkContainerStates)."""
    if pod is None:
        return CONTAINER_MISSING
    cs = app_container_status(pod)
    if cs is None:
        return CONTAINER_MISSING
    state = cs.get("state") or {}
    if state.get("running") is not None:
        for cond in (pod.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Ready":
                return CONTAINER_RUNNING if cond.get("status") == "True" else CONTAINER_UNRESPONSIVE
        return CONTAINER_UNKNOWN
    if state.get("waiting") is not None:
        inits = (pod.get("status") or {}).get("initContainerStatuses") or []
        if inits and ((inits[0].get("state") or {}).get("terminated") is None):
            return CONTAINER_INITIALIZING
        return CONTAINER_WAITING
    if state.get("terminated") is not None:
        return CONTAINER_TERMINATED
    return CONTAINER_UNKNOWN


def observe_member(member: dict[str, Any], pod: Mapping[str, Any] | None, *, systemd_ok: bool = True) -> bool:
    """Update one member from its pod; return True when its state changed.

    create pending -> creating once the pod runs its app container; creating -> configured once the pod is
    Ready (KD would run the app's configure script here; we have no config packages), unless ``systemd_ok`` is
    False: KD starts a role's configure only once systemd answers in the container (members.go systemdOk, for an
    app with systemdRequired and a config package), and until then the member stays creating. A configured member
    whose app container changed (pod re-created or restarted) goes back to create pending, as in KD.
    """
    detail = member.setdefault("stateDetail", {})
    detail["lastKnownContainerState"] = container_state(pod)
    before = member.get("state")
    cid = container_id(pod)
    state = before
    if state in (CONFIGURED, CONFIG_ERROR) and pod is not None and cid and cid != detail.get("lastConfiguredContainer"):
        state = CREATE_PENDING
    if state in (CONFIGURED, CONFIG_ERROR) and pod is None:
        state = CREATE_PENDING
    if state == CREATE_PENDING and pod_running(pod) and cid:
        detail["configuringContainer"] = cid
        state = CREATING
    if state == CREATING:
        if pod is None or (detail.get("configuringContainer") and cid != detail["configuringContainer"]):
            state = CREATE_PENDING
            detail.pop("configuringContainer", None)
        elif pod_ready(pod) and systemd_ok:
            detail["lastConfiguredContainer"] = detail.pop("configuringContainer", cid) or cid
            state = CONFIGURED
    member["state"] = state
    return state != before


def systemd_waits(pod: Mapping[str, Any] | None, member: Mapping[str, Any]) -> bool:
    """True when KD would check systemd in this member now: creating, its app container running."""
    return member.get("state") == CREATING and pod_running(pod) and bool(container_id(pod))


def rollup(roles: Iterable[Mapping[str, Any]]) -> dict[str, bool]:
    """memberStateRollup from the member states (updateStateRollup)."""
    r = {
        k: False
        for k in (
            "membershipChanging",
            "membersDown",
            "membersInitializing",
            "membersWaiting",
            "membersRestarting",
            "configErrors",
            "membersNotScheduled",
        )
    }
    for role in roles:
        for m in role.get("members") or []:
            st = m.get("state")
            detail = m.get("stateDetail") or {}
            known = detail.get("lastKnownContainerState")
            down = known in (CONTAINER_TERMINATED, CONTAINER_UNRESPONSIVE, CONTAINER_MISSING)
            restarting = bool(detail.get("lastConfiguredContainer"))
            if st == CREATE_PENDING:
                r["membersRestarting" if restarting else "membershipChanging"] = True
                if known == CONTAINER_MISSING:
                    r["membersWaiting"] = True
            elif st == CREATING:
                r["membersDown"] |= down
                r["membersRestarting" if restarting else "membershipChanging"] = True
            elif st == CONFIGURED:
                r["membersDown"] |= down
            elif st == DELETE_PENDING:
                r["membersDown"] |= down
                r["membershipChanging"] = True
            elif st == DELETING:
                r["membershipChanging"] = True
            elif st == CONFIG_ERROR:
                r["membersDown"] |= down
                r["configErrors"] = True
            if known == CONTAINER_INITIALIZING:
                r["membersInitializing"] = True
            if known == CONTAINER_WAITING:
                r["membersWaiting"] = True
    return r


def all_members_ready(roles: Iterable[Mapping[str, Any]]) -> bool:
    """True when every member is configured (or in config error): KD's "stable ready"."""
    return all(m.get("state") in (CONFIGURED, CONFIG_ERROR) for role in roles for m in role.get("members") or [])


def cluster_state(previous: str, stable_ready: bool) -> str:
    """creating until the first time every member is ready; then configured, or updating while changing."""
    if stable_ready:
        return CLUSTER_READY
    return CLUSTER_CREATING if previous in ("", CLUSTER_CREATING) else CLUSTER_UPDATING


def connections_hash(secret_versions: Iterable[tuple[str, str]]) -> str:
    """KD's lastConnectionHash over (name, resourceVersion) of connected secrets; a missing one has version ""."""
    text = "".join(name + rv for name, rv in secret_versions)
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


def without_volatile(status: Mapping[str, Any]) -> dict[str, Any]:
    """The status minus generationUID, for "did anything change" comparisons."""
    return {k: v for k, v in status.items() if k != "generationUID"}
