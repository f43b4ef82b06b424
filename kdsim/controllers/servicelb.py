"""A loopback load-balancer controller: LoadBalancer Services get an ingress address, as k3s' servicelb does."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kubernetes.client.exceptions import ApiException

from kubeplumb.informer import Informer, object_key, split_key, start_synced
from kubeplumb.rest import RestClient
from kubeplumb.workqueue import WorkQueue

if TYPE_CHECKING:
    from kdsim.controllers.host import ClusterHost

log = logging.getLogger(__name__)

INGRESS_IP = "127.0.0.1"  # the embedded cluster's only "node" is this machine's loopback


def wanted_status(service: dict[str, Any]) -> dict[str, Any] | None:
    """The status.loadBalancer a LoadBalancer Service should carry, or None when nothing is to change."""
    spec = service.get("spec") or {}
    current = (service.get("status") or {}).get("loadBalancer") or {}
    if spec.get("type") == "LoadBalancer":
        ports = [{"port": p["port"], "protocol": p.get("protocol", "TCP")} for p in spec.get("ports") or ()]
        wanted = {"ingress": [{"ip": INGRESS_IP, "ipMode": "VIP", "ports": ports}]}
    else:
        wanted = {}
    return None if current == wanted else wanted


class ServiceLB:
    """Level-triggered: every LoadBalancer Service gets the loopback ingress; other types none."""

    def __init__(self, cluster: ClusterHost) -> None:
        api_client = cluster.api_client()
        self.rest = RestClient(api_client)
        self.services = Informer(api_client, "v1", "services")
        self.queue = WorkQueue(self.reconcile, name="servicelb")
        self.services.add_handler(lambda _e, obj, _o: self.queue.add(object_key(obj)))

    def start(self) -> ServiceLB:
        start_synced((self.services,))
        self.queue.start()
        return self

    def stop(self) -> None:
        self.queue.stop()
        self.services.stop()

    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        service = self.services.get(namespace, name)
        if service is None or (service["metadata"].get("deletionTimestamp")):
            return
        wanted = wanted_status(service)
        if wanted is None:
            return
        try:
            # JSON merge patch: null removes a stale ingress when the type changed away from LoadBalancer
            self.rest.patch("v1", "services", namespace, name, {"status": {"loadBalancer": wanted or None}}, subresource="status")
        except ApiException as exc:
            if exc.status != 404:
                raise


def start(cluster: ClusterHost) -> ServiceLB:
    """Start the load-balancer controller against the cluster's API server."""
    return ServiceLB(cluster).start()
