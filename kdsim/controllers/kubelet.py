"""The simulated kubelet of node `sim-node`: binds pods, runs their sandboxes, reports status, serves exec."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from kubernetes.client.exceptions import ApiException

from kdsim import images as sim_images
from kdsim.client.informer import Informer, object_key, split_key
from kdsim.client.rest import RestClient
from kdsim.client.workqueue import RequeueAfter, WorkQueue
from kdsim.kubelet import sandbox
from kdsim.kubelet.pods import PodRuntime

if TYPE_CHECKING:
    from kdsim.cluster import EmbeddedCluster

log = logging.getLogger(__name__)

NODE_NAME = "sim-node"
HOST_IP = "10.0.0.10"
TERMINATION_WAIT_CAP = 0.1  # seconds a terminating pod is kept before the kubelet confirms deletion
CLAIM_INDEX = "claim"  # pods by the "namespace/name" of each PVC they mount
IP_INDEX = "pod-ip"  # pods by status.podIP


def _claims_of(pod: dict[str, Any]) -> list[str]:
    ns = pod["metadata"].get("namespace") or ""
    return [f"{ns}/{name}" for vol in (pod.get("spec") or {}).get("volumes") or []
            if (name := (vol.get("persistentVolumeClaim") or {}).get("claimName"))]


def _ip_of(pod: dict[str, Any]) -> list[str]:
    return [str((pod.get("status") or {}).get("podIP"))]


class Kubelet:
    """Level-triggered pod lifecycle for every pod bound (or bindable) to `sim-node`."""

    def __init__(self, cluster: EmbeddedCluster) -> None:
        api_client = cluster.api_client()
        self.cluster = cluster
        self.rest = RestClient(api_client)
        self.images = sim_images.store_for(cluster)
        self.dirs = sandbox.NodeDirs(sim_images.sim_state_dir(cluster))
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

    def _on_claim(self, _event: str, claim: dict, _old: dict | None) -> None:
        for pod in self.pods.by_index(CLAIM_INDEX, f"{claim['metadata'].get('namespace') or ''}/"
                                                   f"{claim['metadata']['name']}"):
            self.queue.add(object_key(pod))

    def start(self) -> Kubelet:
        self._register_node()
        for inf in (self.claims, self.pods):
            inf.start()
        for inf in (self.claims, self.pods):
            inf.wait_synced(30)
        self.queue.start()
        from kdsim.exec.handler import ExecHandler
        from kdsim.kubelet.logs import LogHandler
        self.cluster.set_exec_handler(ExecHandler(self).handle)
        if hasattr(self.cluster, "set_log_handler"):
            self.cluster.set_log_handler(LogHandler(self).handle)
        return self

    def stop(self) -> None:
        self.cluster.set_exec_handler(None)
        if hasattr(self.cluster, "set_log_handler"):
            self.cluster.set_log_handler(None)
        self.queue.stop()
        for inf in (self.pods, self.claims):
            inf.stop()
        sim_images.release(self.cluster)

    def runtime(self, namespace: str, name: str) -> PodRuntime | None:
        """The node-side state of a pod (for exec)."""
        with self._lock:
            return self._runtimes.get(f"{namespace}/{name}")

    def _next_ip(self) -> str:
        with self._lock:
            used = {r.pod_ip for r in self._runtimes.values()}
        while True:
            n = next(self._ips)
            ip = f"10.244.{n // 254}.{n % 254 + 1}"
            if ip not in used and not self.pods.indexed(IP_INDEX, ip):
                return ip

    def lookup(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        if plural == "persistentvolumeclaims":
            return self.claims.get(namespace, name)
        return self.rest.get_or_none("v1", plural, namespace, name)

    def _register_node(self) -> None:
        try:
            self.rest.list("v1", "nodes")
        except ApiException as exc:
            if exc.status == 404:
                log.debug("API server does not serve nodes; no Node object for %s", NODE_NAME)
                return
            raise
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE_NAME, "labels": {
            "kubernetes.io/hostname": NODE_NAME}}, "status": {"addresses": [{"type": "InternalIP", "address": HOST_IP}]}}
        try:
            self.rest.create("v1", "nodes", None, node)
        except ApiException as exc:
            if exc.status != 409:
                raise

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
        if not spec.get("nodeName") and self._bind(pod):
            return  # the bound pod comes back as an event
        if spec.get("nodeName", NODE_NAME) != NODE_NAME:
            return
        if runtime is None:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return
            runtime = (PodRuntime.adopt(pod, HOST_IP) if self.dirs.pod(meta["uid"]).is_dir() else None) \
                or PodRuntime(uid=meta["uid"], pod_ip=self._next_ip(), host_ip=HOST_IP)
            with self._lock:
                self._runtimes[key] = runtime
        if not runtime.ready_to_step:
            try:
                self._bind_claims(pod)
                runtime.setup(pod, self.dirs, self.images, self.lookup)
            except sandbox.VolumeError as exc:
                self._push_status(pod, runtime.pending_status(pod.get("status"), str(exc)))
                raise RequeueAfter(0.5) from None
        delay = runtime.step(pod, self.images)
        self._push_status(pod, runtime.status(pod.get("status")))
        if delay is not None:
            raise RequeueAfter(delay)

    def _bind(self, pod: dict[str, Any]) -> bool:
        """Schedule the pod here through pods/{name}/binding, as the scheduler does; False if unsupported.

        Pod updates may not set spec.nodeName, so without the binding subresource the pod is run unbound
        (the API server then deletes it without a grace period, since no node is assigned).
        """
        if self._binding_unsupported:
            return False
        meta = pod["metadata"]
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": meta["name"]},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": NODE_NAME}}
        try:
            self.rest.request("POST", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/binding",
                              body=binding)
        except ApiException as exc:
            if exc.status not in (404, 405) or "could not find the requested resource" not in (exc.body or ""):
                raise
            log.warning("API server has no pods/binding subresource: running pods on %s without spec.nodeName",
                        NODE_NAME)
            self._binding_unsupported = True
            return False
        self.rest.patch("v1", "pods", meta["namespace"], meta["name"], {"status": {"conditions": [
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
             "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}]}}, subresource="status")
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
            self.rest.patch("v1", "persistentvolumeclaims", ns, claim_name, {"status": {
                "phase": "Bound", "accessModes": (claim.get("spec") or {}).get("accessModes") or ["ReadWriteOnce"],
                "capacity": {"storage": request.get("storage", "1Gi")}}}, subresource="status")
            self.dirs.pvc(ns, claim_name).mkdir(parents=True, exist_ok=True)

    def _terminate(self, key: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        if meta.get("finalizers"):
            return  # whoever owns the finalizer removes it; the API server then removes the pod
        now = time.monotonic()
        with self._lock:
            since = self._terminating_since.setdefault(key, now)
        grace = float(meta.get("deletionGracePeriodSeconds") or 0)
        wait = min(grace, TERMINATION_WAIT_CAP) - (now - since)
        if wait > 0:
            raise RequeueAfter(wait)
        self._forget(key)
        try:
            self.rest.delete("v1", "pods", meta["namespace"], meta["name"], grace_period_seconds=0,
                             uid=meta.get("uid"))
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise

    def _push_status(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        old = pod.get("status") or {}
        if old == status:
            return
        patch: dict[str, Any] = {k: None for k in old if k not in status}
        patch.update(status)
        try:
            self.rest.patch("v1", "pods", pod["metadata"]["namespace"], pod["metadata"]["name"],
                            {"status": patch}, subresource="status")
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise


def start(cluster: EmbeddedCluster) -> Kubelet:
    """Start the kubelet of `sim-node` (and its exec handler) against the cluster."""
    return Kubelet(cluster).start()
