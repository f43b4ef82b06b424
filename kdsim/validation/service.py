"""Service validation on create and update (ports, type, affinity, clusterIP immutability)."""

from __future__ import annotations

from typing import Any

from kdsim import namerules
from kdsim.validation import meta
from kdsim.validation.pod import PROTOCOLS
from kubeplumb import fielderrors as fe
from kubeplumb.fielderrors import FieldError

TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
AFFINITIES = ["ClientIP", "None"]


def _headless(spec: dict[str, Any]) -> bool:
    return spec.get("clusterIP") == "None"


def _cluster_ips(spec: dict[str, Any]) -> list[str]:
    ips = spec.get("clusterIPs")
    if isinstance(ips, list) and ips:
        return [str(ip) for ip in ips]
    return [str(spec["clusterIP"])] if spec.get("clusterIP") else []


def validate_spec(spec: Any, path: str = "spec") -> list[FieldError]:
    spec = spec if isinstance(spec, dict) else {}
    errs: list[FieldError] = []
    kind = spec.get("type", "")
    ports = spec.get("ports") or []
    if not ports and not _headless(spec) and kind != "ExternalName":
        errs.append(fe.required(fe.child(path, "ports"), ""))
    if kind == "ExternalName":
        external = spec.get("externalName", "")
        if not external:
            errs.append(fe.required(fe.child(path, "externalName"), ""))
    seen: set[str] = set()
    for i, port in enumerate(ports):
        p = fe.index(fe.child(path, "ports"), i)
        name = port.get("name", "")
        if len(ports) > 1 and not name:
            errs.append(fe.required(fe.child(p, "name"), ""))
        elif name:
            errs.extend(fe.invalid(fe.child(p, "name"), name, m) for m in namerules.is_dns1123_label(name))
            if name in seen:
                errs.append(fe.duplicate(fe.child(p, "name"), name))
            seen.add(name)
        number = port.get("port", 0)
        errs.extend(fe.invalid(fe.child(p, "port"), number, m) for m in namerules.is_valid_port_num(int(number or 0)))
        protocol = port.get("protocol", "")
        if not protocol:
            errs.append(fe.required(fe.child(p, "protocol"), ""))
        elif protocol not in PROTOCOLS:
            errs.append(fe.not_supported(fe.child(p, "protocol"), protocol, PROTOCOLS))
        target = port.get("targetPort")
        if isinstance(target, int):
            errs.extend(fe.invalid(fe.child(p, "targetPort"), target, m) for m in namerules.is_valid_port_num(target))
        elif isinstance(target, str) and target:
            errs.extend(fe.invalid(fe.child(p, "targetPort"), target, m) for m in namerules.is_valid_port_name(target))
        node_port = port.get("nodePort")
        if node_port and kind not in ("NodePort", "LoadBalancer"):
            errs.append(fe.forbidden(fe.child(p, "nodePort"), "may not be used when `type` is 'ClusterIP'"))
    node_ports: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        if not port.get("nodePort"):
            continue
        key = (str(port.get("protocol", "")), int(port["nodePort"]))
        if key in node_ports:
            errs.append(fe.duplicate(fe.child(fe.index(fe.child(path, "ports"), i), "nodePort"), key[1]))
        node_ports.add(key)
    if not kind:
        errs.append(fe.required(fe.child(path, "type"), ""))
    elif kind not in TYPES:
        errs.append(fe.not_supported(fe.child(path, "type"), kind, TYPES))
    affinity = spec.get("sessionAffinity", "")
    if not affinity:
        errs.append(fe.required(fe.child(path, "sessionAffinity"), ""))
    elif affinity not in AFFINITIES:
        errs.append(fe.not_supported(fe.child(path, "sessionAffinity"), affinity, AFFINITIES))
    errs += meta.validate_labels(spec.get("selector"), fe.child(path, "selector"))
    return errs


def validate_service(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if old is None:
        errs = meta.validate_object_meta(obj.get("metadata"), True, meta.dns1035_label_name)
        return errs + validate_spec(obj.get("spec"))
    errs = meta.validate_object_meta_update(obj.get("metadata"), old.get("metadata"))
    errs += validate_spec(obj.get("spec"))
    new_spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
    if "ExternalName" in (new_spec.get("type"), old_spec.get("type")):
        return errs
    if _headless(new_spec) and _headless(old_spec):
        return errs
    new_ips, old_ips = _cluster_ips(new_spec), _cluster_ips(old_spec)
    if not new_ips:  # the server carries the allocated IPs over when the update leaves them empty
        return errs
    if len(old_ips) == len(new_ips):
        for i, ip in enumerate(old_ips):
            if ip != new_ips[i]:
                errs.append(fe.invalid(fe.index("spec.clusterIPs", i), new_ips, "may not change once set"))
    elif old_ips and old_ips[0] != new_ips[0]:
        errs.append(fe.invalid(fe.index("spec.clusterIPs", 0), new_ips, "may not change once set"))
    return errs
