"""The simulated node's identity (name, addresses, kubelet port) and the Node object it registers."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import Any

from kdsim.kubelet.status import now_rfc3339

KUBELET_VERSION = "v1.20.2-sim"  # the Kubernetes version the sim node was checked against (docs/real-control-plane.md)


@dataclass(frozen=True)
class NodeIdentity:
    """Who the node is: its name, its InternalIP, the /16 its pod IPs come from and its kubelet port (0: none)."""

    name: str = "sim-node"
    host_ip: str = "10.0.0.10"
    pod_network: str = "10.244"
    kubelet_port: int = 0

    def pod_ip(self, n: int) -> str:
        """The n-th pod IP (n >= 1) of the node's pod network."""
        return f"{self.pod_network}.{n // 254}.{n % 254 + 1}"


def node_object(node: NodeIdentity) -> dict[str, Any]:
    """The Node as the kubelet registers it: Ready, its addresses and (when served) its kubelet endpoint."""
    now = now_rfc3339()
    capacity = {"cpu": "8", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    status: dict[str, Any] = {
        "addresses": [{"type": "InternalIP", "address": node.host_ip}, {"type": "Hostname", "address": node.name}],
        "capacity": capacity,
        "allocatable": capacity,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        ],
        "nodeInfo": {
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": KUBELET_VERSION,
            "operatingSystem": "linux",
            "architecture": _arch(),
            "containerRuntimeVersion": "sim://1",
            "osImage": "gitops-kd sim",
            "kernelVersion": platform.release(),
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
        },
    }
    if node.kubelet_port:
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": node.kubelet_port}}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "labels": {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": _arch()},
        },
        "status": status,
    }


def _arch() -> str:
    machine = platform.machine()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
