"""Samples a KDRollout and its cluster's pods from the API server in the background; keeps what broke an invariant."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gitops_kd.testing import pod_ready
from tests.e2e.harness import E2E

INTERVAL = 0.02  # seconds between samples; one sample is two GETs on the embedded API server


@dataclass(frozen=True)
class Sample:
    """One look at the cluster: the KDRollout's status, read just BEFORE its pods (so the pods are never older)."""

    status: dict[str, Any]
    pods: list[dict[str, Any]]

    @property
    def ready(self) -> bool:
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in self.status.get("conditions") or ())

    def images(self) -> dict[str, str]:
        """Pod name -> image of its app container."""
        return {p["metadata"]["name"]: next(c["image"] for c in p["spec"]["containers"] if c["name"] == "app") for p in self.pods}

    def serving(self) -> int:
        """Pods Ready and not terminating."""
        return sum(1 for p in self.pods if pod_ready(p) and not p["metadata"].get("deletionTimestamp"))


Check = Callable[[Sample], str | None]  # a broken invariant named, or None


class Sampler:
    """Runs every check on each sample until stopped; `violations` holds the first few broken ones."""

    def __init__(self, world: E2E, *checks: Check, cluster: str = "hello-dev") -> None:
        self.world, self.checks, self.cluster = world, checks, cluster
        self.samples = 0
        self.violations: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            status = (self.world.rollout(self.cluster) or {}).get("status") or {}
            sample = Sample(status, self.world.pods(self.cluster))
            self.samples += 1
            for check in self.checks:
                broken = check(sample)
                if broken is not None and len(self.violations) < 10:
                    self.violations.append(
                        f"{broken} (status {status.get('phase')}/{status.get('direction')} "
                        f"at {status.get('appVersion')}, pods {sorted(sample.images().items())})"
                    )
            self._stop.wait(INTERVAL)

    def stop(self) -> list[str]:
        """Stop sampling; the broken invariants seen (empty when none)."""
        self._stop.set()
        self._thread.join(10)
        assert self.samples > 0, "the sampler never looked at the cluster"
        return self.violations
