"""Simulated cluster controllers (KubeDirector, StatefulSet controller, kubelet) started beside the API server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kdsim.controllers.host import ClusterHost


class Stoppable(Protocol):
    """A running controller."""

    def stop(self) -> None: ...


def start_all(cluster: ClusterHost) -> list[Stoppable]:
    """Start every simulated controller against `cluster`; return handles to stop them.

    Order matters only for start-up logging; the controllers are level-triggered and independent. The loopback
    load balancer (servicelb) runs only when the cluster has a load-balancer provider (``cluster.load_balancer``).
    """
    from kdsim.controllers import kubedirector, kubelet, servicelb, statefulset

    started: list[Stoppable] = []
    for module in (statefulset, kubelet, kubedirector, servicelb):
        if module is servicelb and not cluster.load_balancer:
            continue
        started.append(module.start(cluster))
    return started
