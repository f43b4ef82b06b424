"""Write kubeconfig files for the loopback control plane: client-cert users and bearer-token users."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def write_kubeconfig(
    path: Path,
    server: str,
    ca: Path,
    *,
    cert: Path | None = None,
    key: Path | None = None,
    token: str | None = None,
    namespace: str = "default",
) -> Path:
    """A one-context kubeconfig for `server`; the user is a client cert (cert+key) or a bearer token."""
    user: dict[str, Any] = {"token": token} if token else {"client-certificate": str(cert), "client-key": str(key)}
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "real",
        "clusters": [{"name": "real", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": "real", "user": user}],
        "contexts": [{"name": "real", "context": {"cluster": "real", "user": "real", "namespace": namespace}}],
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)
    return path
