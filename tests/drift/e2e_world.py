"""A drift-guarded controller on the e2e harness: EmbeddedCluster + Git repo + webhook receiver + metrics."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gitops_kd.controller.drift_watcher import DriftWatcher
from gitops_kd.drift import DriftGuard
from gitops_kd.server.metrics import ControllerMetrics
from gitops_kd.server.notify import WebhookNotifier
from tests.e2e.harness import E2E, NS, wait_for

from .receiver import Receiver

CLUSTER = (NS, "hello-dev")


class DriftWorld:
    """E2E world whose controller is the one `gitops-kd run` runs (drift stage included), with a webhook
    receiver for the drift alerts and the metrics it updates."""

    def __init__(self, tmp: Path, *, poll_interval: float = 0.5) -> None:
        self.e2e = E2E(tmp)
        self.rx = Receiver().__enter__()
        self.metrics = ControllerMetrics()
        self.notifier = WebhookNotifier(self.rx.url, base_delay=0.05)
        self.controller = self.e2e.start_controller(
            poll_interval=poll_interval, metrics=self.metrics, drift_notifier=self.notifier
        )
        assert self.controller.drift is not None and self.controller.drift.watcher is not None
        self.guard: DriftGuard = self.controller.drift.guard
        self.watcher: DriftWatcher = self.controller.drift.watcher

    def close(self) -> None:
        try:
            self.e2e.close()
        finally:
            self.notifier.close()
            self.rx.__exit__()

    # -- waits ---------------------------------------------------------------------------------------
    def wait_baseline(self, commit: str | None = None, timeout: float = 90) -> str:
        def probe() -> str | None:
            got = self.guard.synced_commit(CLUSTER)
            return got if got and (commit is None or got == commit) else None

        return wait_for(f"drift baseline at {commit or 'any commit'}", probe, timeout)

    def sts(self, role: str) -> dict[str, Any]:
        items = self.e2e.rest.list(
            "apps/v1",
            "statefulsets",
            NS,
            label_selector=f"kubedirector.hpe.com/kdcluster=hello-dev,kubedirector.hpe.com/role={role}",
        )
        [sts] = items["items"]
        return sts

    def worker_service(self) -> dict[str, Any]:
        items = self.e2e.rest.list(
            "v1", "services", NS, label_selector="kubedirector.hpe.com/kdcluster=hello-dev,kubedirector.hpe.com/role=worker"
        )
        return sorted(items["items"], key=lambda s: s["metadata"]["name"])[0]

    def kubectl_events(self, name: str, reason: str) -> list[dict[str, Any]]:
        """Events about ``name`` with ``reason``, read with real ``kubectl get events -o json``."""
        out = self.e2e.kubectl("get", "events", "-n", NS, "-o", "json")
        assert out.returncode == 0, out.stderr
        found = [
            e for e in json.loads(out.stdout)["items"] if e["involvedObject"].get("name") == name and e.get("reason") == reason
        ]
        return sorted(found, key=lambda e: int(e["metadata"].get("resourceVersion") or 0))  # oldest first

    def wait_event(self, name: str, reason: str, count: int = 1, timeout: float = 30) -> dict[str, Any]:
        return wait_for(
            f"{count} {reason} event(s) on {name}",
            lambda: (lambda ev: ev[-1] if len(ev) >= count else None)(self.kubectl_events(name, reason)),
            timeout,
            interval=0.2,
        )

    def payloads(self, name: str, state: str) -> list[dict[str, Any]]:
        return [b for b in self.rx.bodies if b["object"]["name"] == name and b["state"] == state]

    def wait_payload(self, name: str, state: str, count: int = 1, timeout: float = 15) -> dict[str, Any]:
        return wait_for(
            f"{count} webhook {state} payload(s) for {name}",
            lambda: (lambda p: p[-1] if len(p) >= count else None)(self.payloads(name, state)),
            timeout,
        )

    def metric(self, metric: str, kind: str, name: str) -> float:
        value = self.metrics.registry.get_sample_value(metric, {"kind": kind, "namespace": NS, "name": name})
        return value or 0.0

    def timed(self, what: str, probe: Any, timeout: float = 30) -> float:
        start = time.monotonic()
        wait_for(what, probe, timeout, interval=0.02)
        return time.monotonic() - start


@contextmanager
def settled_world(tmp: Path) -> Iterator[DriftWorld]:
    """A DriftWorld with hello 1.0.0 Ready, settled and its drift baseline recorded; closed at the end."""
    w = DriftWorld(tmp)
    try:
        w.e2e.wait_ready_at("1.0.0")
        w.e2e.wait_settled()
        w.wait_baseline()
        yield w
    finally:
        w.close()
