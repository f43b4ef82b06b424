"""Helpers shared by the API server tests: JSON from kubectl, polling with a deadline."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any, Callable

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def kubectl_json(run: Kubectl, *args: str) -> Any:
    return json.loads(run(*args, "-o", "json").stdout)


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """Poll `predicate` until it returns something truthy, or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def message_of(exc: Exception) -> str:
    """The metav1.Status message of an ApiException."""
    return str(json.loads(getattr(exc, "body"))["message"])
