"""The embedded cluster's kubelet: the node agent (kdsim.kubelet.agent) started beside the API server, its exec,
attach, port-forward and log handlers served by the API server in process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kdsim import images as sim_images
from kdsim.kubelet.agent import Kubelet

if TYPE_CHECKING:
    from kdsim.controllers.host import ClusterHost


class InProcessKubelet:
    """The embedded cluster's kubelet: exec, attach, port-forward and logs are served by the API server in process."""

    def __init__(self, cluster: ClusterHost) -> None:
        from kdsim.kubelet.exec_handler import ExecHandler
        from kdsim.kubelet.logs import LogHandler
        from kdsim.kubelet.portforward import PortForwardHandler

        self.cluster = cluster
        self.kubelet = Kubelet(
            cluster.api_client(), state_dir=sim_images.sim_state_dir(cluster), images=sim_images.store_for(cluster)
        )
        self.kubelet.start()
        cluster.set_exec_handler(ExecHandler(self.kubelet).handle)
        cluster.set_log_handler(LogHandler(self.kubelet).handle)
        cluster.set_portforward_handler(PortForwardHandler(self.kubelet).handle)

    def stop(self) -> None:
        self.cluster.set_exec_handler(None)
        self.cluster.set_log_handler(None)
        self.cluster.set_portforward_handler(None)
        self.kubelet.stop()
        sim_images.release(self.cluster)


def start(cluster: ClusterHost) -> InProcessKubelet:
    """Start the kubelet of `sim-node` (and its exec and log handlers) against the embedded cluster."""
    return InProcessKubelet(cluster)
