"""Kind-specific write rules: initial status, Secret stringData conversion, Service clusterIP allocation."""

from __future__ import annotations

import base64
import copy
import ipaddress
import itertools
from collections.abc import Callable
from typing import Any

from kdsim import errors
from kdsim.apiserver.meta import meta, now
from kdsim.apiserver.resources import CRD_GROUP, CRD_PLURAL, ResourceType

_SERVICE_NET = ipaddress.ip_network("10.96.0.0/12")


def prepare_create(rt: ResourceType, obj: dict[str, Any]) -> None:
    """The status (and spec) a new object of this kind starts with."""
    if rt.group == "" and rt.plural == "pods":
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj.get("spec") or {})}
    elif rt.group == "" and rt.plural == "namespaces":
        obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
        obj["status"] = {"phase": "Active"}
        meta(obj).setdefault("labels", {})["kubernetes.io/metadata.name"] = meta(obj)["name"]
    elif rt.group == "" and rt.plural == "persistentvolumeclaims":
        obj["status"] = {"phase": "Pending"}
    elif rt.group == CRD_GROUP and rt.plural == CRD_PLURAL:
        names = (obj.get("spec") or {}).get("names") or {}
        obj["status"] = {
            "acceptedNames": copy.deepcopy(names),
            "storedVersions": [v.get("name") for v in (obj.get("spec") or {}).get("versions") or [] if v.get("storage")],
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "reason": "NoConflicts",
                    "message": "no conflicts found",
                    "lastTransitionTime": now(),
                },
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                    "lastTransitionTime": now(),
                },
            ],
        }


def qos_class(pod_spec: dict[str, Any]) -> str:
    """The pod's QoS class as the API server computes it on create: BestEffort, Guaranteed or Burstable."""
    containers = list(pod_spec.get("containers") or []) + list(pod_spec.get("initContainers") or [])
    any_set, guaranteed = False, True
    for c in containers:
        res = c.get("resources") or {}
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        if any(k in limits or k in requests for k in ("cpu", "memory")):
            any_set = True
        for k in ("cpu", "memory"):
            if k not in limits or str(requests.get(k, limits[k])) != str(limits[k]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def convert(rt: ResourceType, obj: dict[str, Any]) -> None:
    """What decoding a v1 object does to it: a Secret's stringData is merged into data (base64)."""
    if rt.group == "" and rt.plural == "secrets" and isinstance(obj.get("stringData"), dict):
        data: dict[str, Any] = obj["data"] if isinstance(obj.get("data"), dict) else {}
        for key, value in obj.pop("stringData").items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data


CLUSTER_IP_INDEX = "service-cluster-ip"  # store index: Services by spec.clusterIP


def cluster_ips(key: tuple[str, str, str, str], obj: dict[str, Any]) -> list[str]:
    """The store index function of CLUSTER_IP_INDEX."""
    if key[0] != "" or key[1] != "services":
        return []
    ip = (obj.get("spec") or {}).get("clusterIP")
    return [str(ip)] if ip and ip != "None" else []


class ClusterIPs:
    """Allocates Services' clusterIPs from 10.96.0.0/12: the next free address after the last one given
    (kube-apiserver picks a random free one; either way no two Services share an address)."""

    def __init__(self) -> None:
        self._next = int(_SERVICE_NET.network_address) + 10

    def allocate(self, rt: ResourceType, obj: dict[str, Any], in_use: Callable[[str], bool]) -> None:
        """Give a new Service a free clusterIP (`in_use(ip)`: whether an existing Service has it)."""
        if rt.group != "" or rt.plural != "services":
            return
        spec = obj.setdefault("spec", {})
        if spec.get("type") == "ExternalName" or spec.get("clusterIP") == "None":
            if spec.get("clusterIP") == "None":
                spec["clusterIPs"] = ["None"]
            return
        if spec.get("clusterIP"):
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
            return
        first, last = int(_SERVICE_NET.network_address) + 10, int(_SERVICE_NET.broadcast_address) - 1
        for n in itertools.chain(range(self._next, last + 1), range(first, self._next)):
            ip = str(ipaddress.IPv4Address(n))
            if in_use(ip):
                continue
            self._next = n + 1 if n < last else first
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            return
        raise errors.internal("failed to allocate a serviceIP: range is full")
