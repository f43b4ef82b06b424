"""Kubeconfig for the embedded API server: CA data, server URL, a bearer-token user (tokens are not checked)."""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path
from typing import Any

import yaml

CLUSTER = "gitops-kd-sim"
USER = "gitops-kd-admin"


def build(server_url: str, ca_pem: bytes | None, token: str | None = None) -> dict[str, Any]:
    """A kubeconfig dict with one cluster, user and (current) context."""
    cluster: dict[str, Any] = {"server": server_url}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": CLUSTER, "cluster": cluster}],
        "users": [{"name": USER, "user": {"token": token or secrets.token_urlsafe(24)}}],
        "contexts": [{"name": CLUSTER, "context": {"cluster": CLUSTER, "user": USER, "namespace": "default"}}],
        "current-context": CLUSTER,
    }


def write(path: Path, server_url: str, ca_pem: bytes | None, token: str | None = None) -> Path:
    """Write the kubeconfig atomically (mode 0600) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(build(server_url, ca_pem, token), sort_keys=False), encoding="utf-8")
    tmp.chmod(0o600)
    os.replace(tmp, path)
    return path
