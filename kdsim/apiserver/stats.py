"""Request accounting: how many API requests the server answered, by (verb, resource), for tests and benchmarks."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class RequestKey:
    """One kind of request: a Kubernetes verb and a resource (`pods`, `statefulsets/status`)."""

    verb: str
    resource: str


class RequestStats:
    """Thread-safe counters of resource requests (including ones failed by injected faults)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[RequestKey] = Counter()

    def record(self, verb: str, resource: str) -> None:
        with self._lock:
            self._counts[RequestKey(verb, resource)] += 1

    def counts(self) -> dict[RequestKey, int]:
        with self._lock:
            return dict(self._counts)

    def total(self, verb: str | None = None, resource: str | None = None) -> int:
        """Requests so far, optionally only of one verb and/or one resource."""
        with self._lock:
            return sum(
                n
                for k, n in self._counts.items()
                if (verb is None or k.verb == verb) and (resource is None or k.resource == resource)
            )

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()

    def to_dict(self) -> dict[str, int]:
        """`{"list pods": 3, "patch statefulsets/status": 1}`: the body of GET /sim/requests."""
        return {
            f"{k.verb} {k.resource}": n for k, n in sorted(self.counts().items(), key=lambda kv: (kv[0].resource, kv[0].verb))
        }
