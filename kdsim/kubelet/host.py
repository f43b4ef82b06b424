"""What the kubelet's exec, port-forward, log and HTTP handlers read of the node agent (its pods and their state)."""

from __future__ import annotations

from typing import Any, Protocol

from kdsim.kubelet.pods import PodRuntime


class PodHost(Protocol):
    """The node agent as its handlers see it (kdsim.kubelet.agent.Kubelet is one)."""

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod as the node last saw it, if it runs on this node."""
        ...

    def runtime(self, namespace: str, name: str) -> PodRuntime | None:
        """The node-side state of a pod (its containers' processes and contexts)."""
        ...

    def pods_here(self) -> list[dict[str, Any]]:
        """Every pod bound to this node."""
        ...
