"""Helpers for tests against a cluster (the embedded one or real): polling with a deadline, pod readiness."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60.0, interval: float = 0.05) -> T:
    """Poll `probe` until it returns something truthy and return that; fail naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last={last!r}")


def pod_ready(pod: Mapping[str, Any] | None) -> bool:
    """True when the pod's Ready condition is True."""
    return any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in ((pod or {}).get("status") or {}).get("conditions") or []
    )
