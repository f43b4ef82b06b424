"""A pod watcher that keeps the timeline: (monotonic time, pods down) after each event, plus deletions."""

from __future__ import annotations

import threading
import time
from typing import Any

from gitops_kd.testing import pod_ready
from kubeplumb.rest import RestClient
from tests.e2e.harness import CLUSTER_LABEL, NS


class DownTimeline:
    """Watches the pods of one KDCluster; `max_down` is the most members not serving at once."""

    def __init__(self, rest: RestClient, cluster: str, expected: int, ns: str = NS) -> None:
        self.rest, self.cluster, self.expected, self.ns = rest, cluster, expected, ns
        self.timeline: list[tuple[float, int, str]] = []
        self.deleted: list[str] = []
        listing = rest.list("v1", "pods", ns, label_selector=f"{CLUSTER_LABEL}={cluster}")
        self._pods: dict[str, dict[str, Any]] = {p["metadata"]["name"]: p for p in listing["items"]}
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, args=(listing["metadata"]["resourceVersion"],), daemon=True)
        self._thread.start()

    @property
    def max_down(self) -> int:
        """Most members down at once, counted from the first moment all were up (a watch may replay the
        creation of the pods before its resourceVersion)."""
        downs = [down for _, down, _ in self.timeline]
        start = next((i for i, d in enumerate(downs) if d == 0), len(downs))
        return max(downs[start:], default=0)

    def _down(self) -> int:
        up = sum(1 for p in self._pods.values() if pod_ready(p) and not p["metadata"].get("deletionTimestamp"))
        return self.expected - up

    def _run(self, rv: str) -> None:
        self._stream = self.rest.watch(
            "v1", "pods", self.ns, resource_version=rv, timeout_seconds=600, label_selector=f"{CLUSTER_LABEL}={self.cluster}"
        )
        for event in self._stream:
            kind, obj = event.get("type"), event.get("object") or {}
            if kind not in ("ADDED", "MODIFIED", "DELETED"):
                continue
            name = obj["metadata"]["name"]
            old = self._pods.get(name)
            if (
                (obj["metadata"].get("deletionTimestamp") or kind == "DELETED")
                and old is not None
                and not old["metadata"].get("deletionTimestamp")
                and old["metadata"].get("uid") == obj["metadata"].get("uid")
            ):
                self.deleted.append(name)
            if kind == "DELETED":
                self._pods.pop(name, None)
            else:
                self._pods[name] = obj
            self.timeline.append((time.monotonic(), self._down(), f"{kind} {name} ready={pod_ready(obj)}"))

    def stop(self) -> None:
        if self._stream is not None:
            self._stream.close()
        self._thread.join(5)
