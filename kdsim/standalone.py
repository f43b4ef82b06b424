"""The simulated node and KubeDirector joined to any API server named by a kubeconfig (`gitops-kd sim node|kubedirector`)."""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from types import TracebackType
from typing import Any, cast

import kubernetes.config
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from kdcrds import kubedirector_crds
from kdsim.controllers.kubedirector import KubeDirectorController
from kdsim.images import ImageStore
from kdsim.kubelet.agent import Kubelet
from kdsim.kubelet.node import NodeIdentity
from kdsim.kubelet.server import KubeletServer, ServingTls
from kubeplumb.rest import RestClient

log = logging.getLogger(__name__)

LOOPBACK_POD_NETWORK = "127.244"  # pod IPs of a node on 127.0.0.1: loopback addresses too
CRD_ESTABLISHED_TIMEOUT = 60.0


def api_client_from(kubeconfig: Path) -> ApiClient:
    """An ApiClient for the kubeconfig's current context; ValueError naming the file if it is unusable."""
    try:
        return cast(ApiClient, kubernetes.config.new_client_from_config(config_file=str(kubeconfig)))
    except (OSError, kubernetes.config.ConfigException, ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"{kubeconfig}: not a usable kubeconfig: {exc}") from exc


class SimNode:
    """A node on 127.0.0.1: the simulated kubelet (over the API server's HTTP API) and its HTTPS endpoint.

    The endpoint starts first so the Node registers with `daemonEndpoints.kubeletEndpoint.Port` before any
    pod runs here; images come from `state_dir/images` (ImageStore.add there before starting, or synthetic).
    """

    def __init__(
        self,
        api_client: ApiClient,
        state_dir: Path,
        *,
        name: str = "sim-node",
        address: str = "127.0.0.1",
        port: int = 0,
        serving: ServingTls | None = None,
        bind_pending: bool = True,
    ) -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        node = NodeIdentity(name=name, host_ip=address, pod_network=LOOPBACK_POD_NETWORK)
        self.kubelet = Kubelet(
            api_client, state_dir=state_dir, images=ImageStore(state_dir / "images"), node=node, bind_pending=bind_pending
        )
        self.server = KubeletServer(self.kubelet, address=address, port=port, serving=serving, workdir=state_dir / "pki")
        self._started: list[Any] = []

    @property
    def endpoint(self) -> str:
        return f"https://{self.server.address}:{self.server.port}"

    def start(self) -> SimNode:
        try:
            self._started.append(self.server.start())
            self.kubelet.node = dataclasses.replace(self.kubelet.node, kubelet_port=self.server.port)
            self._started.append(self.kubelet.start())
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        while self._started:
            self._started.pop().stop()

    def __enter__(self) -> SimNode:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def install_kubedirector_crds(api_client: ApiClient, timeout: float = CRD_ESTABLISHED_TIMEOUT) -> list[str]:
    """Create KubeDirector's CRDs where missing and wait until every one is Established; the names created."""
    rest = RestClient(api_client)
    created = []
    crds = kubedirector_crds()
    for crd in crds:
        try:
            rest.create("apiextensions.k8s.io/v1", "customresourcedefinitions", None, crd)
            created.append(crd["metadata"]["name"])
        except ApiException as exc:
            if exc.status != 409:
                raise
    deadline = time.monotonic() + timeout
    for crd in crds:
        name = crd["metadata"]["name"]
        while True:
            got = rest.get("apiextensions.k8s.io/v1", "customresourcedefinitions", None, name)
            if any(
                c.get("type") == "Established" and c.get("status") == "True"
                for c in (got.get("status") or {}).get("conditions") or []
            ):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"CustomResourceDefinition {name} not Established after {timeout:.0f}s")
            time.sleep(0.2)
    return created


class SimKubeDirector:
    """The simulated KubeDirector against any API server (its CRDs installed first when `install_crds`)."""

    def __init__(self, api_client: ApiClient, *, install_crds: bool = True) -> None:
        self.api_client = api_client
        self.install_crds = install_crds
        self.controller: KubeDirectorController | None = None

    def start(self) -> SimKubeDirector:
        if self.install_crds:
            created = install_kubedirector_crds(self.api_client)
            if created:
                log.info("installed %s", ", ".join(created))
        self.controller = KubeDirectorController(self.api_client).start()
        return self

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None
