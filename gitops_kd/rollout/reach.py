"""Whether a member is reachable through its own Service: the ports the Service targets against the ports its
pod's app container declares, i.e. what the version the pod runs listens on (pure).

KubeDirector makes one Service per member (pkg/executor/service.go CreatePodService: selector
``statefulset.kubernetes.io/pod-name=<pod>``, one port per service endpoint of the role, no targetPort, so the
target is the port) and declares the same endpoints as the app container's ports (statefulset.go: containerPort,
named by the endpoint's id). A Service port's target is its targetPort (a number, or a name the pod's ports
resolve), else its port, as Kubernetes routes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gitops_kd.rollout.model import Unreachable
from kubeplumb.names import POD_NAME_LABEL

Ports = tuple[tuple[str, int], ...]
"""A container's ports as (name, containerPort) pairs, in the order declared."""


def container_ports(container: Mapping[str, Any]) -> Ports:
    """The (name, containerPort) pairs a container declares (ports without a number are left out)."""
    out: list[tuple[str, int]] = []
    for port in container.get("ports") or ():
        number = port.get("containerPort")
        if isinstance(number, int) and not isinstance(number, bool):
            out.append((str(port.get("name") or ""), number))
    return tuple(out)


def service_pod(service: Mapping[str, Any]) -> str | None:
    """The one pod a member Service selects (its StatefulSet pod-name selector), or None (the headless Service)."""
    selector = (service.get("spec") or {}).get("selector") or {}
    value = selector.get(POD_NAME_LABEL)
    return str(value) if value else None


def target_ports(service_ports: Iterable[Mapping[str, Any]], pod_ports: Ports) -> tuple[int, ...]:
    """Where each Service port sends traffic on the pod: its targetPort, a named one resolved by the pod's port
    names (0 when the pod declares no port of that name), else the port itself."""
    names = dict(pod_ports)
    out: list[int] = []
    for port in service_ports:
        target = port.get("targetPort")
        if target is None or target == "":
            target = port.get("port")
        if isinstance(target, str) and not target.isdigit():
            out.append(names.get(target, 0))
        else:
            try:
                out.append(int(target))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                out.append(0)
    return tuple(out)


def unreachable_member(
    pod: str, service: str, service_ports: Iterable[Mapping[str, Any]], pod_ports: Ports
) -> Unreachable | None:
    """The record of a member whose Service targets other ports than its running pod listens on, None when they
    match (or the pod declares no port: nothing is known of what it listens on)."""
    if not pod_ports:
        return None
    targets = target_ports(service_ports, pod_ports)
    listens = tuple(p for _, p in pod_ports)
    if sorted(set(targets)) == sorted(set(listens)):
        return None
    return Unreachable(pod, service, targets, listens)


__all__ = ["Ports", "container_ports", "service_pod", "target_ports", "unreachable_member"]
