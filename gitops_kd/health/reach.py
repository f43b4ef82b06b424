"""Members unreachable through their own Service, from the fetched Services and pods (pure): the rule of
rollout/reach.py applied to raw objects, and what it does to a Service's health row."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gitops_kd.health._fields import being_deleted, condition, items, section, text
from gitops_kd.health.model import Health, HealthStatus, is_worse
from gitops_kd.kd.layout import APP_CONTAINER
from gitops_kd.rollout.model import UNREACHABLE_FIELD, Unreachable
from gitops_kd.rollout.reach import container_ports, service_pod, unreachable_member

Obj = Mapping[str, Any]


def _app_container(pod: Obj) -> Obj:
    return next((c for c in items(section(pod, "spec"), "containers") if text(c, "name") == APP_CONTAINER), {})


def unreachable_members(services: Iterable[Obj], pods: Iterable[Obj]) -> tuple[Unreachable, ...]:
    """Members with a running pod (present, not being deleted) whose own Service targets other ports than the
    pod's app container declares, by pod name (a pod being replaced has no server to reach: not listed)."""
    by_name = {text(section(p, "metadata"), "name"): p for p in pods}
    out: list[Unreachable] = []
    for svc in services:
        name = service_pod(svc)
        pod = by_name.get(name) if name else None
        if pod is None or being_deleted(pod):
            continue
        found = unreachable_member(
            str(name),
            text(section(svc, "metadata"), "name"),
            items(section(svc, "spec"), "ports"),
            container_ports(_app_container(pod)),
        )
        if found is not None:
            out.append(found)
    return tuple(sorted(out, key=lambda u: u.pod))


def reach_health(found: Unreachable, pods: Iterable[Obj]) -> Health:
    """A Service whose member cannot be reached through it: Degraded once that pod is Ready (a client finds
    nothing there), Progressing while the pod is not Ready yet (it serves nothing anyway)."""
    pod = next((p for p in pods if text(section(p, "metadata"), "name") == found.pod), None)
    ready = condition(section(pod, "status"), "Ready") if pod is not None else None
    status = HealthStatus.DEGRADED if ready is not None and ready.get("status") == "True" else HealthStatus.PROGRESSING
    return Health(status, f"{UNREACHABLE_FIELD}: {found.describe()}")  # the message starts with the status field's name


def worse(current: Health, other: Health) -> Health:
    return other if is_worse(current.status, other.status) else current


__all__ = ["reach_health", "unreachable_members", "worse"]
