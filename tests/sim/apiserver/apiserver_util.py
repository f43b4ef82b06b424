"""Helpers shared by the API server tests: JSON from kubectl, polling with a deadline."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    return str(json.loads(exc.body)["message"])


def raw(
    cluster: Any, method: str, path: str, body: Any = None, *, content_type: str = "application/json", timeout: float = 30
) -> tuple[int, bytes]:
    """One HTTPS request to the cluster with urllib (trusting its CA); returns (status, body)."""
    import ssl
    import urllib.error
    import urllib.request

    ctx = ssl.create_default_context(cadata=cluster.server.tls.ca_cert.decode())
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(
        cluster.url + path, data=data, method=method, headers={"Content-Type": content_type, "Authorization": "Bearer anything"}
    )
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()
