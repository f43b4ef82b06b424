"""What the simulated controllers use of the cluster they run in (kdsim.cluster.EmbeddedCluster is one)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from kubernetes.client import ApiClient

from kdsim.apiserver.handlers import PodHandler
from kdsim.apiserver.server import ApiServer


class ClusterHost(Protocol):
    """The cluster as the controllers see it: its API server, an API client and the in-process pod handlers."""

    server: ApiServer
    state_dir: Path | None
    kubedirector_user: str | None
    load_balancer: bool  # False: no load-balancer provider (the servicelb controller is not started)

    def api_client(self, token: str | None = None) -> ApiClient:
        """An API client presenting `token` (the admin's when None)."""
        ...

    def set_exec_handler(self, handler: PodHandler | None) -> None:
        """Route pods/{name}/exec and /attach to `handler`."""
        ...

    def set_portforward_handler(self, handler: PodHandler | None) -> None:
        """Route pods/{name}/portforward to `handler`."""
        ...

    def set_log_handler(self, handler: PodHandler | None) -> None:
        """Route pods/{name}/log to `handler`."""
        ...
