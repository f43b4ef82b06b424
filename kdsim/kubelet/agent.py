"""The simulated kubelet of one node (the node agent): registers it, binds pods, runs their sandboxes, reports status."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from kdsim import images as sim_images
from kdsim.events import EventRecorder
from kdsim.kubelet import sandbox
from kdsim.kubelet.node import NodeIdentity, node_object
from kdsim.kubelet.pods import PodRuntime
from kubeplumb.informer import Informer, object_key, split_key, start_synced
from kubeplumb.names import NORMAL
from kubeplumb.rest import RestClient
from kubeplumb.workqueue import RequeueAfter, WorkQueue

log = logging.getLogger(__name__)

NODE_NAME = NodeIdentity().name
TERMINATION_WAIT_CAP = 0.1  # seconds a terminating pod is kept before the kubelet confirms deletion
CLAIM_INDEX = "claim"  # pods by the "namespace/name" of each PVC they mount
IP_INDEX = "pod-ip"  # pods by status.podIP


def _claims_of(pod: dict[str, Any]) -> list[str]:
    ns = pod["metadata"].get("namespace") or ""
    return [
        f"{ns}/{name}"
        for vol in (pod.get("spec") or {}).get("volumes") or []
        if (name := (vol.get("persistentVolumeClaim") or {}).get("claimName"))
    ]


def _ip_of(pod: dict[str, Any]) -> list[str]:
    return [str((pod.get("status") or {}).get("podIP"))]


class Kubelet:
    """Level-triggered pod lifecycle for every pod bound to its node (and, with `bind_pending`, every pod
    that no scheduler bound: the kubelet then binds it to its node itself, which a real kubelet never does).

    It talks to the API server only over HTTP (`api_client`), so it serves the embedded cluster and any
    other API server alike; `state_dir` holds pod sandboxes and claim volumes, `images` the image store.
    """

    def __init__(
        self,
        api_client: ApiClient,
        *,
        state_dir: Path,
        images: sim_images.ImageStore,
        node: NodeIdentity | None = None,
        bind_pending: bool = True,
    ) -> None:
        self.node = node or NodeIdentity()
        self.bind_pending = bind_pending
        self.rest = RestClient(api_client)
        self.images = images
        self.dirs = sandbox.NodeDirs(state_dir)
        self.events = EventRecorder(self.rest, "kubelet", ("Pod", "v1"), host=self.node.name)
        self.scheduler_events = EventRecorder(
            self.rest, "default-scheduler", ("Pod", "v1"), instance="default-scheduler-sim", new_style=True
        )
        self.node_images: set[str] = set()  # the images "pulled" on this node
        self.pods = Informer(api_client, "v1", "pods")
        self.pods.add_index(CLAIM_INDEX, _claims_of)
        self.pods.add_index(IP_INDEX, _ip_of)
        self.claims = Informer(api_client, "v1", "persistentvolumeclaims")
        self.queue = WorkQueue(self.reconcile, name="kubelet", workers=3)
        self.pods.add_handler(lambda _e, obj, _o: self.queue.add(object_key(obj)))
        self.claims.add_handler(self._on_claim)
        self._lock = threading.Lock()
        self._runtimes: dict[str, PodRuntime] = {}
        self._terminating_since: dict[str, float] = {}
        self._ips = itertools.count(1)
        self._binding_unsupported = False

    def _on_claim(self, _event: str, claim: dict[str, Any], _old: dict[str, Any] | None) -> None:
        for pod in self.pods.by_index(CLAIM_INDEX, f"{claim['metadata'].get('namespace') or ''}/{claim['metadata']['name']}"):
            self.queue.add(object_key(pod))

    def start(self) -> Kubelet:
        """Register the Node (with its kubelet endpoint, before any pod runs here), then run pods."""
        self._register_node()
        start_synced((self.claims, self.pods))
        self.queue.start()
        return self

    def stop(self) -> None:
        self.queue.stop()
        self.events.close()
        self.scheduler_events.close()
        for inf in (self.pods, self.claims):
            inf.stop()

    def runtime(self, namespace: str, name: str) -> PodRuntime | None:
        """The node-side state of a pod (for exec)."""
        with self._lock:
            return self._runtimes.get(f"{namespace}/{name}")

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod as this kubelet last saw it (its watch cache), if it runs on this node."""
        pod = self.pods.get(namespace, name)
        if pod is None or (pod.get("spec") or {}).get("nodeName", self.node.name) != self.node.name:
            return None
        return pod

    def pods_here(self) -> list[dict[str, Any]]:
        """Every pod bound to this node (what GET /pods on a kubelet lists)."""
        return [p for p in self.pods.list() if (p.get("spec") or {}).get("nodeName") == self.node.name]

    def _next_ip(self) -> str:
        with self._lock:
            used = {r.pod_ip for r in self._runtimes.values()}
        while True:
            n = next(self._ips)
            ip = self.node.pod_ip(n)
            if ip not in used and not self.pods.indexed(IP_INDEX, ip):
                return ip

    def lookup(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        if plural == "persistentvolumeclaims":
            return self.claims.get(namespace, name)
        return self.rest.get_or_none("v1", plural, namespace, name)

    def _register_node(self) -> None:
        """Create the Node, or (a restart, maybe on another port) bring its status up to date."""
        try:
            self.rest.list("v1", "nodes")
        except ApiException as exc:
            if exc.status == 404:
                log.debug("API server does not serve nodes; no Node object for %s", self.node.name)
                return
            raise
        node = node_object(self.node)
        try:
            self.rest.create("v1", "nodes", None, node)
            return
        except ApiException as exc:
            if exc.status != 409:
                raise
        self.rest.patch("v1", "nodes", None, self.node.name, {"status": node["status"]}, subresource="status")

    # -- reconcile ---------------------------------------------------------------------------------
    def _forget(self, key: str) -> None:
        with self._lock:
            runtime = self._runtimes.pop(key, None)
            self._terminating_since.pop(key, None)
        if runtime is not None:
            sandbox.remove_sandbox(self.dirs, runtime.uid)

    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        ns = namespace or ""
        pod = self.pods.get(ns, name)
        if pod is None:
            self._forget(key)
            return
        meta, spec = pod["metadata"], pod.get("spec") or {}
        with self._lock:
            runtime = self._runtimes.get(key)
        if runtime is not None and runtime.uid != meta.get("uid"):
            self._forget(key)
            runtime = None
        if meta.get("deletionTimestamp"):
            self._terminate(key, pod)
            return
        if not spec.get("nodeName"):
            if not self.bind_pending:
                return  # a scheduler's job
            if self._bind(pod):
                return  # the bound pod comes back as an event
        if spec.get("nodeName", self.node.name) != self.node.name:
            return
        host_ip = self.node.host_ip
        if runtime is None:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return
            runtime = (PodRuntime.adopt(pod, host_ip) if self.dirs.pod(meta["uid"]).is_dir() else None) or PodRuntime(
                uid=meta["uid"], pod_ip=self._next_ip(), host_ip=host_ip
            )
            runtime.node_images = self.node_images
            with self._lock:
                self._runtimes[key] = runtime
        if not runtime.ready_to_step:
            try:
                self._bind_claims(pod)
                runtime.setup(pod, self.dirs, self.images, self.lookup)
            except sandbox.VolumeError as exc:
                self._push_status(pod, runtime.pending_status(pod.get("status"), str(exc)))
                raise RequeueAfter(0.5) from None
        try:
            delay = runtime.step(pod, self.images)
        finally:
            self._record(pod, runtime.take_events())
        self._push_status(pod, runtime.status(pod.get("status")))
        if delay is not None:
            raise RequeueAfter(delay)

    def _bind(self, pod: dict[str, Any]) -> bool:
        """Schedule the pod here through pods/{name}/binding, as a scheduler does; False if unsupported.

        Pod updates may not set spec.nodeName, so without the binding subresource the pod is run unbound
        (the API server then deletes it without a grace period, since no node is assigned).
        """
        if self._binding_unsupported:
            return False
        meta = pod["metadata"]
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.node.name},
        }
        try:
            self.rest.request("POST", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/binding", body=binding)
        except ApiException as exc:
            if exc.status not in (404, 405) or "could not find the requested resource" not in (exc.body or ""):
                raise
            log.warning("API server has no pods/binding subresource: running pods on %s without spec.nodeName", self.node.name)
            self._binding_unsupported = True
            return False
        self.scheduler_events.event(
            pod,
            NORMAL,
            "Scheduled",
            f"Successfully assigned {meta['namespace']}/{meta['name']} to {self.node.name}",
            action="Binding",
        )
        self.rest.patch(
            "v1",
            "pods",
            meta["namespace"],
            meta["name"],
            {
                "status": {
                    "conditions": [
                        {
                            "type": "PodScheduled",
                            "status": "True",
                            "lastProbeTime": None,
                            "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        }
                    ]
                }
            },
            subresource="status",
        )
        return True

    def _bind_claims(self, pod: dict[str, Any]) -> None:
        """Bind the pod's Pending claims (a provisioner's job): phase Bound, spec.volumeName."""
        ns = pod["metadata"]["namespace"]
        for vol in (pod.get("spec") or {}).get("volumes") or []:
            claim_name = str((vol.get("persistentVolumeClaim") or {}).get("claimName") or "")
            claim = self.claims.get(ns, claim_name) if claim_name else None
            if claim is None or (claim.get("status") or {}).get("phase") == "Bound":
                continue
            volume = f"pvc-{claim['metadata'].get('uid')}"
            if not (claim.get("spec") or {}).get("volumeName"):
                self.rest.patch("v1", "persistentvolumeclaims", ns, claim_name, {"spec": {"volumeName": volume}})
            request = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
            self.rest.patch(
                "v1",
                "persistentvolumeclaims",
                ns,
                claim_name,
                {
                    "status": {
                        "phase": "Bound",
                        "accessModes": (claim.get("spec") or {}).get("accessModes") or ["ReadWriteOnce"],
                        "capacity": {"storage": request.get("storage", "1Gi")},
                    }
                },
                subresource="status",
            )
            self.dirs.pvc(ns, claim_name).mkdir(parents=True, exist_ok=True)

    def _terminate(self, key: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        if meta.get("finalizers"):
            return  # whoever owns the finalizer removes it; the API server then removes the pod
        now = time.monotonic()
        with self._lock:
            first = key not in self._terminating_since
            since = self._terminating_since.setdefault(key, now)
            runtime = self._runtimes.get(key)
        if first and runtime is not None and runtime.uid == meta.get("uid"):
            self._record(pod, runtime.stopping())
        grace = float(meta.get("deletionGracePeriodSeconds") or 0)
        wait = min(grace, TERMINATION_WAIT_CAP) - (now - since)
        if wait > 0:
            raise RequeueAfter(wait)
        self._forget(key)
        try:
            self.rest.delete("v1", "pods", meta["namespace"], meta["name"], grace_period_seconds=0, uid=meta.get("uid"))
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise

    def _record(self, pod: dict[str, Any], events: list[tuple[str, str, str, str]]) -> None:
        for kind, reason, message, field_path in events:
            self.events.event(pod, kind, reason, message, field_path=field_path)

    def _push_status(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        old = pod.get("status") or {}
        if old == status:
            return
        patch: dict[str, Any] = {k: None for k in old if k not in status}
        patch.update(status)
        try:
            self.rest.patch(
                "v1", "pods", pod["metadata"]["namespace"], pod["metadata"]["name"], {"status": patch}, subresource="status"
            )
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise
