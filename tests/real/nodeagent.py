"""What a real cluster's scheduler and storage provisioner do, for the one real node: each pod without a node is
bound to it (pods/binding, as kube-scheduler does), and each Pending claim of the default StorageClass gets a
hostPath PersistentVolume in its own folder on the node, pre-bound to the claim (kube-controller-manager's
persistentvolume-binder then binds both)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubeplumb.rest import RestClient
from tests.real.kubedirector import DEFAULT_CLASS

log = logging.getLogger(__name__)
PV_LABEL = "gitops-kd.io/real-node-volume"  # on every PersistentVolume the agent makes
PERIOD = 0.3  # seconds between two looks


def volume_folder(storage: Path, claim: dict[str, Any]) -> Path:
    """The node folder holding a claim's files: STORAGE/<namespace>/<claim name>-<uid prefix>."""
    meta = claim["metadata"]
    return storage / str(meta["namespace"]) / f"{meta['name']}-{meta['uid'][:8]}"


class NodeAgent:
    """`with NodeAgent(rest, node_name, storage):` binds pods and provisions claims until the context ends."""

    def __init__(self, rest: RestClient, node: str, storage: Path) -> None:
        self.rest, self.node, self.storage = rest, node, storage
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="real-node-agent", daemon=True)
        self.errors: list[str] = []

    def __enter__(self) -> NodeAgent:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(PERIOD):
            try:
                self.bind_pods()
                self.provision_claims()
            except Exception as exc:  # a transient error (the API server restarting): the next look tries again
                self.errors.append(repr(exc))
                log.debug("real node agent: %r", exc)

    def bind_pods(self) -> None:
        for pod in self.rest.list("v1", "pods", None, field_selector="spec.nodeName=")["items"]:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": meta["name"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": self.node},
            }
            try:
                self.rest.request("POST", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/binding", body=binding)
            except ApiException as exc:
                if exc.status not in (404, 409):  # gone, or bound meanwhile
                    raise

    def provision_claims(self) -> None:
        for claim in self.rest.list("v1", "persistentvolumeclaims", None)["items"]:
            spec = claim.get("spec") or {}
            if spec.get("volumeName") or (claim.get("status") or {}).get("phase") != "Pending":
                continue
            if (spec.get("storageClassName") or DEFAULT_CLASS) != DEFAULT_CLASS or claim["metadata"].get("deletionTimestamp"):
                continue
            meta = claim["metadata"]
            folder = volume_folder(self.storage, claim)
            folder.mkdir(parents=True, exist_ok=True)
            volume = {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": f"pv-{meta['uid']}", "labels": {PV_LABEL: "true"}},
                "spec": {
                    "capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")},
                    "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": DEFAULT_CLASS,
                    "hostPath": {"path": str(folder), "type": "Directory"},
                    "claimRef": {
                        "apiVersion": "v1",
                        "kind": "PersistentVolumeClaim",
                        "namespace": meta["namespace"],
                        "name": meta["name"],
                        "uid": meta["uid"],
                    },
                },
            }
            try:
                self.rest.create("v1", "persistentvolumes", None, volume)
            except ApiException as exc:
                if exc.status != 409:
                    raise
