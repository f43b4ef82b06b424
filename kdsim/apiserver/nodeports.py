"""Service nodePorts as kube-apiserver allocates them: 30000-32767, kept on update, freed with the Service."""

from __future__ import annotations

import random
from typing import Any

from kdsim import errors
from kubeplumb import fielderrors as fe

FIRST, LAST = 30000, 32767  # --service-node-port-range's default
NOT_IN_RANGE = f"provided port is not in the valid range. The range of valid ports is {FIRST}-{LAST}"
ALLOCATED = "provided port is already allocated"


def needs_node_port(spec: dict[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def should_allocate(spec: dict[str, Any]) -> bool:
    """NodePort always; LoadBalancer unless spec.allocateLoadBalancerNodePorts is false."""
    if spec.get("type") == "NodePort":
        return True
    return spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False


NODE_PORT_INDEX = "service-node-port"  # store index: Services by each spec.ports[].nodePort


def node_ports(key: tuple[str, str, str, str], obj: dict[str, Any]) -> list[str]:
    """The store index function of NODE_PORT_INDEX: the nodePorts a stored Service holds."""
    if key[0] != "" or key[1] != "services":
        return []
    return [str(p["nodePort"]) for p in (obj.get("spec") or {}).get("ports") or () if isinstance(p, dict) and p.get("nodePort")]


def in_use(held: set[str]) -> set[int]:
    """The nodePorts in use, from the index's values (``Store.index_values(NODE_PORT_INDEX, skip=...)``)."""
    return {int(v) for v in held}


def patch_allocated(new: dict[str, Any], old: dict[str, Any]) -> None:
    """An update that leaves out values the server allocated keeps them (patchAllocatedValues): the clusterIP,
    and the nodePort of each port by name, unless another port of the new spec already uses it."""
    ns, os_ = new.setdefault("spec", {}), old.get("spec") or {}
    if (
        ns.get("type") != "ExternalName"
        and os_.get("type") != "ExternalName"
        and "None" not in (ns.get("clusterIP"), os_.get("clusterIP"))
    ):
        if not ns.get("clusterIP") and os_.get("clusterIP"):
            ns["clusterIP"] = os_["clusterIP"]
        if not ns.get("clusterIPs") and os_.get("clusterIPs"):
            ns["clusterIPs"] = list(os_["clusterIPs"])
    if not (needs_node_port(ns) and needs_node_port(os_)):
        return
    old_ports = [p for p in os_.get("ports") or () if isinstance(p, dict)]
    new_ports = [p for p in ns.get("ports") or () if isinstance(p, dict)]
    taken = {p.get("nodePort") for p in old_ports if p.get("nodePort")} & {
        p.get("nodePort") for p in new_ports if p.get("nodePort")
    }
    by_name = {str(p.get("name") or ""): p.get("nodePort") for p in old_ports}
    for port in new_ports:
        if not port.get("nodePort"):
            value = by_name.get(str(port.get("name") or ""))
            if value and value not in taken:
                port["nodePort"] = value


def drop_unneeded(new: dict[str, Any], old: dict[str, Any]) -> None:
    """A type change away from NodePort/LoadBalancer clears the nodePorts the user left as they were."""
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if needs_node_port(ns) or not needs_node_port(os_):
        return
    old_ports = {(p.get("name"), p.get("nodePort")) for p in os_.get("ports") or () if isinstance(p, dict)}
    for port in ns.get("ports") or ():
        if isinstance(port, dict) and (port.get("name"), port.get("nodePort")) in old_ports:
            port.pop("nodePort", None)


def _claim(name: str, i: int, value: int, used: set[int]) -> None:
    path = f"spec.ports[{i}].nodePort"
    if not FIRST <= value <= LAST:
        raise errors.invalid("Service", name, [_cause(fe.invalid(path, value, NOT_IN_RANGE))])
    if value in used:
        raise errors.invalid("Service", name, [_cause(fe.invalid(path, value, ALLOCATED))])
    used.add(value)


def _cause(err: fe.FieldError) -> errors.Cause:
    return errors.Cause(err.reason, err.message, err.path)


def _next(used: set[int]) -> int:
    free = [p for p in range(FIRST, LAST + 1) if p not in used]
    if not free:
        raise errors.internal("failed to allocate a nodePort: range is full")
    value = random.choice(free)
    used.add(value)
    return value


def allocate_create(obj: dict[str, Any], used: set[int]) -> None:
    """Give each port of a new Service that needs one a nodePort (ports sharing a port number share it); the
    nodePorts it asks for must be free and in range (422 naming the port)."""
    spec = obj.get("spec") or {}
    if not needs_node_port(spec):
        return
    name = str((obj.get("metadata") or {}).get("name") or "")
    ports = [p for p in spec.get("ports") or () if isinstance(p, dict)]
    by_number: dict[Any, int] = {}
    for i, port in enumerate(ports):
        if not port.get("nodePort") and not should_allocate(spec):
            continue
        shared = by_number.get(port.get("port"))
        if shared is None:
            asked = next((int(p["nodePort"]) for p in ports[i:] if p.get("port") == port.get("port") and p.get("nodePort")), 0)
            if asked:
                _claim(name, i, asked, used)
                by_number[port.get("port")] = port["nodePort"] = asked
            else:
                by_number[port.get("port")] = port["nodePort"] = _next(used)
        elif int(port.get("nodePort") or 0) != shared:
            if not port.get("nodePort"):
                port["nodePort"] = shared
            else:
                _claim(name, i, int(port["nodePort"]), used)


def allocate_update(new: dict[str, Any], old: dict[str, Any], used: set[int]) -> None:
    """An update keeps the nodePorts the old Service held, claims the new ones it asks for and allocates one for
    each port left without (`used`: the nodePorts of the other Services). What it no longer holds is freed."""
    spec = new.get("spec") or {}
    if not needs_node_port(spec):
        return
    name = str((new.get("metadata") or {}).get("name") or "")
    held = {int(p["nodePort"]) for p in (old.get("spec") or {}).get("ports") or () if isinstance(p, dict) and p.get("nodePort")}
    claimed: set[int] = set()
    for i, port in enumerate(p for p in spec.get("ports") or () if isinstance(p, dict)):
        value = int(port.get("nodePort") or 0)
        if value:
            if value not in held and value not in claimed:
                _claim(name, i, value, used)
                claimed.add(value)
        elif should_allocate(spec):
            port["nodePort"] = _next(used | held | claimed)
            claimed.add(port["nodePort"])
