"""Pure StatefulSet reconcile pass: from a set, its pods and revisions, the actions to take and the new status.

Mirrors Kubernetes' stateful_set_control.go: identity (names, labels, hostname/subdomain, PVC volumes),
OrderedReady vs Parallel, scale-down from the highest ordinal, RollingUpdate with partition, OnDelete,
failed-pod replacement, and the status counters that `kubectl rollout status` reads.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from kdsim.controllers.revisions import POD_REVISION_LABEL, owner_reference, template_of
from kubeplumb.names import POD_NAME_LABEL

POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


@dataclass(frozen=True)
class Action:
    """One API call: verb is "create_pvc", "create_pod" or "delete_pod"; obj is the object concerned."""

    verb: str
    obj: dict[str, Any]


@dataclass(frozen=True)
class Plan:
    actions: tuple[Action, ...]
    status: dict[str, Any] = field(default_factory=dict)


def ordinal_of(sts_name: str, pod_name: str) -> int | None:
    """The ordinal of `<sts>-<n>`, or None when the name is not one of this set's."""
    m = re.fullmatch(r"(.*)-([0-9]+)", pod_name)
    if not m or m.group(1) != sts_name:
        return None
    return int(m.group(2))


def claim_name(template_name: str, sts_name: str, ordinal: int) -> str:
    return f"{template_name}-{sts_name}-{ordinal}"


def _spec(sts: Mapping[str, Any]) -> dict[str, Any]:
    return sts.get("spec") or {}


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def new_pod(sts: Mapping[str, Any], revision: Mapping[str, Any], ordinal: int) -> dict[str, Any]:
    """The pod `<sts>-<ordinal>` built from the revision's template, with the StatefulSet identity."""
    name = f"{_meta(sts)['name']}-{ordinal}"
    template = template_of(revision)
    tmeta = template.get("metadata") or {}
    labels = dict(tmeta.get("labels") or {})
    labels.update({POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal), POD_REVISION_LABEL: _meta(revision)["name"]})
    meta: dict[str, Any] = {
        "name": name,
        "namespace": _meta(sts).get("namespace"),
        "labels": labels,
        "ownerReferences": [owner_reference(sts)],
    }
    for key in ("annotations", "finalizers"):
        if tmeta.get(key):
            meta[key] = copy.deepcopy(tmeta[key])
    spec = copy.deepcopy(template.get("spec") or {})
    spec["hostname"] = name
    if _spec(sts).get("serviceName"):
        spec["subdomain"] = _spec(sts)["serviceName"]
    claims = {
        t["metadata"]["name"]: claim_name(t["metadata"]["name"], _meta(sts)["name"], ordinal)
        for t in _spec(sts).get("volumeClaimTemplates") or []
    }
    volumes = [{"name": t, "persistentVolumeClaim": {"claimName": c}} for t, c in claims.items()]
    volumes += [v for v in spec.get("volumes") or [] if v.get("name") not in claims]
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def new_claims(sts: Mapping[str, Any], ordinal: int) -> list[dict[str, Any]]:
    """The PVCs of one ordinal, from the volumeClaimTemplates (labelled with the set's selector)."""
    selector = ((_spec(sts).get("selector") or {}).get("matchLabels")) or {}
    claims = []
    for tmpl in _spec(sts).get("volumeClaimTemplates") or []:
        tmeta = tmpl.get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        labels.update(selector)
        meta: dict[str, Any] = {
            "name": claim_name(tmeta["name"], _meta(sts)["name"], ordinal),
            "namespace": _meta(sts).get("namespace"),
            "labels": labels,
        }
        if tmeta.get("annotations"):
            meta["annotations"] = dict(tmeta["annotations"])
        claims.append(
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": copy.deepcopy(tmpl.get("spec") or {})}
        )
    return claims


def pod_revision(pod: Mapping[str, Any]) -> str:
    return cast(str, (_meta(pod).get("labels") or {}).get(POD_REVISION_LABEL, ""))


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool(_meta(pod).get("deletionTimestamp"))


def is_running_and_ready(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def is_healthy(pod: Mapping[str, Any]) -> bool:
    return is_running_and_ready(pod) and not is_terminating(pod)


def _finished(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")


def plan(
    sts: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    existing_claims: Container[str],
    current: Mapping[str, Any],
    update: Mapping[str, Any],
    collision_count: int,
) -> Plan:
    """One reconcile pass. `pods` are the pods this set owns; `existing_claims` the PVC names present."""
    spec, name = _spec(sts), _meta(sts)["name"]
    replica_count = int(spec.get("replicas", 1))
    start = int((spec.get("ordinals") or {}).get("start") or 0)
    monotonic = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
    strategy = spec.get("updateStrategy") or {}
    rolling = strategy.get("type", "RollingUpdate") == "RollingUpdate"
    partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0) if rolling else 0
    cur_name, upd_name = _meta(current)["name"], _meta(update)["name"]
    prior_current = int((sts.get("status") or {}).get("currentReplicas") or 0)

    status: dict[str, Any] = {
        "observedGeneration": _meta(sts).get("generation", 0),
        "replicas": 0,
        "readyReplicas": 0,
        "availableReplicas": 0,
        "currentReplicas": 0,
        "updatedReplicas": 0,
        "currentRevision": cur_name,
        "updateRevision": upd_name,
        "collisionCount": collision_count,
    }

    def count(pod: Mapping[str, Any], sign: int = 1) -> None:
        status["replicas"] += sign
        if is_running_and_ready(pod):
            status["readyReplicas"] += sign
            status["availableReplicas"] += sign
        if not is_terminating(pod):
            if pod_revision(pod) == cur_name:
                status["currentReplicas"] += sign
            if pod_revision(pod) == upd_name:
                status["updatedReplicas"] += sign

    replicas: dict[int, dict[str, Any] | None] = {o: None for o in range(start, start + replica_count)}
    condemned: list[tuple[int, Mapping[str, Any]]] = []
    for pod in pods:
        count(pod)
        ordinal = ordinal_of(name, _meta(pod).get("name", ""))
        if ordinal is None:
            continue
        if ordinal in replicas:
            replicas[ordinal] = dict(pod)
        else:
            condemned.append((ordinal, pod))
    condemned.sort(key=lambda t: t[0])

    actions: list[Action] = []
    if _meta(sts).get("deletionTimestamp"):
        return Plan((), _complete(status, rolling))

    def versioned(ordinal: int) -> dict[str, Any]:
        index = ordinal - start
        at_current = rolling and ((partition == 0 and index < prior_current) or (partition > 0 and index < partition))
        return new_pod(sts, current if at_current else update, ordinal)

    ordered = [r for o in sorted(replicas) if (r := replicas[o]) is not None] + [p for _, p in condemned]
    first_unhealthy = next((p for p in ordered if not is_healthy(p)), None)

    for ordinal in sorted(replicas):
        member = replicas[ordinal]
        if member is not None and _finished(member) and not is_terminating(member):
            actions.append(Action("delete_pod", member))
            return Plan(tuple(actions), _complete(status, rolling))
        if member is None:
            fresh = versioned(ordinal)
            for claim in new_claims(sts, ordinal):
                if claim["metadata"]["name"] not in existing_claims:
                    actions.append(Action("create_pvc", claim))
            actions.append(Action("create_pod", fresh))
            count(fresh)
            if monotonic:
                return Plan(tuple(actions), _complete(status, rolling))
            continue
        if is_terminating(member):
            if monotonic:
                return Plan(tuple(actions), _complete(status, rolling))
            continue
        if monotonic and not is_running_and_ready(member):
            return Plan(tuple(actions), _complete(status, rolling))

    for _ordinal, pod in reversed(condemned):
        if is_terminating(pod):
            if monotonic:
                return Plan(tuple(actions), _complete(status, rolling))
            continue
        if monotonic and not is_healthy(pod) and pod is not first_unhealthy:
            return Plan(tuple(actions), _complete(status, rolling))
        actions.append(Action("delete_pod", dict(pod)))
        if monotonic:
            return Plan(tuple(actions), _complete(status, rolling))

    if rolling:
        for ordinal in sorted(replicas, reverse=True):
            if ordinal - start < partition:
                break
            member = replicas[ordinal]
            if member is None or member.get("status") is None:
                break  # being created in this pass
            if pod_revision(member) != upd_name and not is_terminating(member):
                actions.append(Action("delete_pod", member))
                status["currentReplicas"] -= 1 if pod_revision(member) == cur_name else 0
                break
            if not is_healthy(member):
                break
    return Plan(tuple(actions), _complete(status, rolling))


def _complete(status: dict[str, Any], rolling: bool) -> dict[str, Any]:
    """completeRollingUpdate: once every pod is updated and ready, the update revision becomes current."""
    if rolling and status["updatedReplicas"] == status["replicas"] and status["readyReplicas"] == status["replicas"]:
        status["currentReplicas"] = status["updatedReplicas"]
        status["currentRevision"] = status["updateRevision"]
    return status
