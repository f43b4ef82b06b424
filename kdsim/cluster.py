"""EmbeddedCluster: the API server emulator plus (optionally) the simulated controllers, as one context manager."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import kubernetes.client
import kubernetes.config

from kdsim.apiserver import kubeconfig as kubeconfig_file
from kdsim.apiserver.access import AccessLog
from kdsim.apiserver.faults import FaultInjector
from kdsim.apiserver.handlers import PodHandler
from kdsim.apiserver.server import ApiServer
from kdsim.apiserver.stats import RequestStats
from kdsim.apiserver.storage import HISTORY_LIMIT, Store
from kdsim.controllers import start_all as start_controllers

log = logging.getLogger(__name__)


class EmbeddedCluster:
    """A Kubernetes-compatible cluster on loopback: `with EmbeddedCluster() as c: c.api_client()`.

    `state_dir` keeps the store, TLS material and kubeconfig across restarts (a temporary directory when None).
    `kd_app_edits`: "strict" (default) admits like stock KubeDirector's webhook (spec edits and deletes of a KDApp
    that KDClusters use are refused, a KDCluster's app is read-only); "upgrade" admits every KDApp edit;
    "live-app-upgrade" is KubeDirector's live-app-upgrade branch (its CRDs, its spec.app switch rules and its reaction
    to a switch: kdsim/kubedirector/live_upgrade.py). A setting, like the others: not saved.
    `crds`: CustomResourceDefinitions to install at start besides KubeDirector's (e.g. the operator's own under test).
    `kubedirector_user`: the simulated KubeDirector's bearer token, i.e. its user (tokens are not checked), e.g. its
    ServiceAccount `system:serviceaccount:kubedirector:kubedirector` as admission webhooks see it; default: the
    admin's, like the other simulated controllers. `history_limit`: the watch history kept per resource (older
    resourceVersions get 410 Expired). `load_balancer` False: no load-balancer provider (the loopback servicelb is not
    started), as on a bare-metal cluster or a real control plane without one: LoadBalancer Services get no ingress.
    """

    def __init__(
        self,
        state_dir: Path | None = None,
        *,
        controllers: bool = True,
        use_tls: bool = True,
        port: int = 0,
        bookmark_interval: float = 5.0,
        pod_grace_cap: float = 1.0,
        kd_app_edits: str = "strict",
        crds: Sequence[Mapping[str, Any]] = (),
        kubedirector_user: str | None = None,
        history_limit: int = HISTORY_LIMIT,
        load_balancer: bool = True,
    ) -> None:
        self.kubedirector_user = kubedirector_user
        self.load_balancer = load_balancer
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self.controllers_enabled = controllers
        self.server = ApiServer(
            self.state_dir,
            port=port,
            use_tls=use_tls,
            bookmark_interval=bookmark_interval,
            pod_grace_cap=pod_grace_cap,
            kd_app_edits=kd_app_edits,
            crds=crds,
            history_limit=history_limit,
        )
        self._controllers: list[Any] = []
        self.kubeconfig = Path()
        self._started = False

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> EmbeddedCluster:
        if self._started:
            return self
        self.server.start()
        self._started = True
        base = self.state_dir
        if base is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="gitops-kd-cluster-")
            base = Path(self._tmp.name)
        ca = self.server.tls.ca_cert if self.server.tls is not None else None
        self.kubeconfig = kubeconfig_file.write(base / "kubeconfig", self.server.url, ca)
        if self.controllers_enabled:
            self.start_controllers()
        return self

    def start_controllers(self) -> EmbeddedCluster:
        """Start the simulated controllers (once; start() does, unless made with controllers=False). Objects
        created before they start are in their caches at their first pass, as for controllers started against a
        cluster that already holds them: e.g. KubeDirector adopting a role StatefulSet created right after its
        KDCluster, instead of racing to create its own."""
        if self._controllers:
            return self
        try:
            self._controllers = list(start_controllers(self))
        except Exception:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for controller in reversed(self._controllers):
            try:
                controller.stop()
            except Exception:  # keep stopping the rest
                log.exception("stopping controller %r failed", controller)
        self._controllers = []
        if self._started:
            self.server.stop()
            self._started = False
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> EmbeddedCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # -- access --------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.server.url

    @property
    def store(self) -> Store:
        """The in-process store: `get(api_version, plural, namespace, name)`, `list(api_version, plural, ...)`."""
        return self.server.store

    @property
    def faults(self) -> FaultInjector:
        return self.server.faults

    @property
    def requests(self) -> RequestStats:
        """Counts of the API requests served so far, by (verb, resource)."""
        return self.server.stats

    @property
    def access_log(self) -> AccessLog:
        """Every resource request so far with its user (bearer token), verb, group, resource and subresource."""
        return self.server.access

    @property
    def controllers(self) -> list[Any]:
        return list(self._controllers)

    def api_client(self, token: str | None = None) -> kubernetes.client.ApiClient:
        """A fresh official-client ApiClient configured from this cluster's kubeconfig (presenting `token`, when
        given, instead of the admin's)."""
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=str(self.kubeconfig), client_configuration=configuration)
        if token:  # the kubeconfig's refresh hook would put the admin's token back before each request
            configuration.refresh_api_key_hook = None
            configuration.api_key = {"authorization": f"Bearer {token}"}
        return kubernetes.client.ApiClient(configuration)

    def set_exec_handler(self, handler: PodHandler | None) -> None:
        """Route GET/POST pods/{name}/exec and /attach to `handler(request, namespace, name)`."""
        self.server.exec_handler = handler

    def set_portforward_handler(self, handler: PodHandler | None) -> None:
        """Route pods/{name}/portforward to `handler(request, namespace, name)`."""
        self.server.portforward_handler = handler

    def set_log_handler(self, handler: PodHandler | None) -> None:
        """Route GET pods/{name}/log to `handler(request, namespace, name)`."""
        self.server.log_handler = handler
