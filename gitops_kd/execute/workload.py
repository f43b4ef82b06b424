"""SetOnDelete, PatchTemplate, PatchServicePorts, DeletePod: the StatefulSet/Service/Pod side of an upgrade."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from gitops_kd.constants import REQUEUE_NOT_CACHED
from gitops_kd.execute.context import ExecContext, generation, rv
from gitops_kd.execute.outcome import Outcome
from gitops_kd.kd.layout import CLUSTER_LABEL
from gitops_kd.observe.collector import Expectation
from gitops_kd.plan.actions import DeletePod, PatchServicePorts, PatchTemplate, SetOnDelete
from gitops_kd.status import events as ev

log = logging.getLogger(__name__)


def set_on_delete(ctx: ExecContext, action: SetOnDelete) -> Outcome:
    sts = ctx.rest.get("apps/v1", "statefulsets", action.namespace, action.statefulset)
    if ((sts.get("spec") or {}).get("updateStrategy") or {}).get("type") == "OnDelete":
        return Outcome(action.describe(), False, "already OnDelete")
    patched = ctx.rest.patch(
        "apps/v1",
        "statefulsets",
        action.namespace,
        action.statefulset,
        {"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": None}}},
    )
    if action.cluster:
        ctx.event_on_cluster(
            action.namespace,
            action.cluster,
            ev.STRATEGY_SET,
            f"StatefulSet {action.statefulset} (role {action.role}): updateStrategy OnDelete",
        )
    return Outcome(
        action.describe(),
        True,
        "updateStrategy set to OnDelete",
        expect=(Expectation("statefulsets", action.namespace, action.statefulset, rv(patched)),),
    )


def patch_template(ctx: ExecContext, action: PatchTemplate) -> Outcome:
    """The strategic merge patch is idempotent by nature; a patch that changes nothing keeps the generation."""
    before = ctx.rest.get("apps/v1", "statefulsets", action.namespace, action.statefulset)
    patched = ctx.rest.patch(
        "apps/v1", "statefulsets", action.namespace, action.statefulset, action.patch_body, patch_type="strategic"
    )
    changed = generation(patched) != generation(before)
    if changed and action.cluster:
        fields = ", ".join(action.fields) or "owned fields"
        ctx.event_on_cluster(
            action.namespace,
            action.cluster,
            ev.TEMPLATE_UPDATED,
            f"StatefulSet {action.statefulset} (role {action.role}): pod template updated ({fields})",
        )
    return Outcome(
        action.describe(),
        changed,
        "template patched" if changed else "template already up to date",
        expect=(Expectation("statefulsets", action.namespace, action.statefulset, rv(patched)),),
    )


def _port_key(port: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        port.get("name"),
        port.get("port"),
        port.get("protocol") or "TCP",
        port.get("targetPort") if port.get("targetPort") is not None else port.get("port"),
    )


def keep_node_ports(desired: list[dict[str, Any]], live: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`desired` with each port that stays carrying its live nodePort (a merge patch replacing spec.ports makes a
    real API server allocate a new nodePort for every port given without one). A desired port stays when a live
    port has its name; the rest are matched by port number and protocol among the live ports left. A nodePort
    the desired port gives is kept as given."""
    unused = [p for p in live if p.get("nodePort")]
    matched: dict[int, Mapping[str, Any]] = {}
    rules: tuple[Callable[[Mapping[str, Any], Mapping[str, Any]], bool], ...] = (
        lambda want, have: bool(want.get("name")) and want.get("name") == have.get("name"),
        lambda want, have: (
            want.get("port") == have.get("port") and (want.get("protocol") or "TCP") == (have.get("protocol") or "TCP")
        ),
    )
    for same in rules:
        for i, port in enumerate(desired):
            if i in matched or port.get("nodePort"):
                continue
            if (found := next((p for p in unused if same(port, p)), None)) is not None:
                unused.remove(found)
                matched[i] = found
    return [{**port, "nodePort": matched[i]["nodePort"]} if i in matched else port for i, port in enumerate(desired)]


def patch_service_ports(ctx: ExecContext, action: PatchServicePorts) -> Outcome:
    svc = ctx.rest.get("v1", "services", action.namespace, action.service)
    live_ports = (svc.get("spec") or {}).get("ports") or []
    live = [_port_key(p) for p in live_ports]
    if live == [_port_key(p) for p in action.ports]:
        return Outcome(action.describe(), False, "ports already up to date")
    ports = []
    for p in action.ports_body:
        p.setdefault("targetPort", p.get("port"))
        ports.append(p)
    ports = keep_node_ports(ports, live_ports)
    patched = ctx.rest.patch("v1", "services", action.namespace, action.service, {"spec": {"ports": ports}})
    if action.cluster:
        text = ", ".join(f"{p.get('name')}:{p.get('port')}" for p in ports)
        ctx.event_on_cluster(action.namespace, action.cluster, ev.PORTS_UPDATED, f"Service {action.service}: ports now [{text}]")
    return Outcome(
        action.describe(), True, "ports updated", expect=(Expectation("services", action.namespace, action.service, rv(patched)),)
    )


def _others_down(ctx: ExecContext, action: DeletePod) -> str | None:
    """Fresh from the API server (not the cache): a pod of the cluster, other than action.pod, that is not
    Ready, terminating or missing — the last check before a destructive step (never two pods down)."""
    selector = f"{CLUSTER_LABEL}={action.cluster}"
    pods = ctx.rest.list("v1", "pods", action.namespace, label_selector=selector)["items"]
    wanted = sum(
        int((s.get("spec") or {}).get("replicas") or 0)
        for s in ctx.rest.list("apps/v1", "statefulsets", action.namespace, label_selector=selector)["items"]
    )
    for pod in pods:
        meta = pod.get("metadata") or {}
        if meta.get("name") == action.pod:
            continue
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or ()
        )
        if meta.get("deletionTimestamp") or not ready:
            return f"pod {meta.get('name')} is not Ready"
    if len(pods) < wanted:
        return f"{wanted - len(pods)} pod(s) of the cluster missing"
    return None


def delete_pod(ctx: ExecContext, action: DeletePod) -> Outcome:
    """Delete with a uid precondition: 404 (gone) and 409 (already replaced) count as done. Refused (retried
    later) while another pod of the cluster is down."""
    gone = (Expectation("pods", action.namespace, action.pod, gone_uid=action.uid),)
    if action.cluster and (why := _others_down(ctx, action)) is not None:
        return Outcome(
            action.describe(), False, f"not deleting {action.pod}: {why}", failed=True, requeue_after=REQUEUE_NOT_CACHED
        )
    try:
        answer = ctx.rest.delete("v1", "pods", action.namespace, action.pod, uid=action.uid)
    except ApiException as exc:
        if exc.status in (404, 409):
            return Outcome(action.describe(), False, f"pod already replaced ({exc.status})", expect=gone)
        raise
    if answer.get("kind") == "Pod" and rv(answer):  # graceful deletion: the pod lingers, terminating
        gone = (Expectation("pods", action.namespace, action.pod, rv(answer), gone_uid=action.uid),)
    if action.cluster:
        role = f" (role {action.role})" if action.role else ""
        ctx.event_on_cluster(
            action.namespace,
            action.cluster,
            ev.POD_REPLACED,
            f"deleted pod {action.pod}{role}; the StatefulSet recreates it at the new revision",
        )
    return Outcome(action.describe(), True, "pod deleted", expect=gone)
