"""ReachWatch: polls a cluster's member Services and pods while a rollout runs and records every member whose own
Service sends traffic to ports its running, Ready pod does not declare (what a client of that Service would see
broken). Written against the API objects only (not gitops-kd's code): a Service port's target is its targetPort, a
named one resolved by the pod's container port names, else its port."""

from __future__ import annotations

import threading
import time
from typing import Any

from gitops_kd.testing import pod_ready
from kubeplumb.rest import RestClient
from tests.e2e.harness import CLUSTER_LABEL

POD_NAME = "statefulset.kubernetes.io/pod-name"


def member_service_ports(rest: RestClient, ns: str, cluster: str) -> dict[str, list[int]]:
    """Member pod name -> the ports its own Service exposes (the headless Service selects no single pod)."""
    out: dict[str, list[int]] = {}
    for svc in rest.list("v1", "services", ns, label_selector=f"{CLUSTER_LABEL}={cluster}")["items"]:
        pod = (svc["spec"].get("selector") or {}).get(POD_NAME)
        if pod:
            out[pod] = [int(p["port"]) for p in svc["spec"].get("ports") or ()]
    return out


def _targets(svc: dict[str, Any], declared: dict[str, int]) -> set[int]:
    out = set()
    for p in svc["spec"].get("ports") or ():
        target = p.get("targetPort", p["port"])
        out.add(declared.get(target, 0) if isinstance(target, str) else int(target))
    return out


def mismatched(rest: RestClient, ns: str, cluster: str) -> dict[str, tuple[set[int], set[int]]]:
    """Member pod -> (its Service's targets, its app container's ports) for every running, Ready pod whose own
    Service targets other ports. Services are read first: a Service newer than the pods it is compared with
    would make a pod replaced meanwhile look unreachable."""
    services = rest.list("v1", "services", ns, label_selector=f"{CLUSTER_LABEL}={cluster}")["items"]
    pods = {p["metadata"]["name"]: p for p in rest.list("v1", "pods", ns, label_selector=f"{CLUSTER_LABEL}={cluster}")["items"]}
    out: dict[str, tuple[set[int], set[int]]] = {}
    for svc in services:
        pod = pods.get((svc["spec"].get("selector") or {}).get(POD_NAME, ""))
        if pod is None or pod["metadata"].get("deletionTimestamp") or not pod_ready(pod):
            continue
        app = next(c for c in pod["spec"]["containers"] if c["name"] == "app")
        declared = {str(p.get("name", "")): int(p["containerPort"]) for p in app.get("ports") or ()}
        targets = _targets(svc, declared)
        if targets != set(declared.values()):
            out[pod["metadata"]["name"]] = (targets, set(declared.values()))
    return out


class ReachWatch:
    """Polls every ``period`` seconds until stopped; ``broken`` holds each member seen unreachable on two polls in
    a row (a single poll may straddle the moment a pod and its Service change) with what was seen."""

    def __init__(self, rest: RestClient, ns: str, cluster: str, period: float = 0.1) -> None:
        self.rest, self.ns, self.cluster, self.period = rest, ns, cluster, period
        self.broken: dict[str, tuple[set[int], set[int]]] = {}
        self.polls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        previous: dict[str, tuple[set[int], set[int]]] = {}
        while not self._stop.is_set():
            try:
                seen = mismatched(self.rest, self.ns, self.cluster)
            except Exception:  # noqa: BLE001 - a poll that failed (server busy) is not a finding
                seen = {}
            self.polls += 1
            for pod in seen.keys() & previous.keys():
                self.broken.setdefault(pod, seen[pod])
            previous = seen
            time.sleep(self.period)

    def stop(self) -> dict[str, tuple[set[int], set[int]]]:
        self._stop.set()
        self._thread.join(timeout=30)
        assert self.polls > 0, "the watch never polled"
        return self.broken
