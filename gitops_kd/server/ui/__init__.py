"""The read-only web UI served by the controller under /ui (same server and port as /metrics).

``ui_config`` wires it to a controller's API client and Git source; ``add_ui_routes`` and
``auth_middleware`` (gitops_kd/server/ui/routes.py) attach it to an aiohttp Application. See docs/ui.md.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient

from gitops_kd.health.service import LB_REQUIRE
from gitops_kd.server.ui.auth import AuthFileError, UiAuth
from gitops_kd.server.ui.reader import UiReader
from gitops_kd.server.ui.routes import UiConfig, add_ui_routes, auth_middleware

__all__ = ["AuthFileError", "UiAuth", "UiConfig", "UiSettings", "add_ui_routes", "auth_middleware", "redact_url", "ui_config"]


@dataclass(frozen=True)
class UiSettings:
    """`gitops-kd run --ui/--no-ui --ui-auth-file --ui-refresh`: on by default, open unless an auth file is given."""

    enabled: bool = True
    auth_file: str | Path | None = None
    refresh_seconds: float = 2.0
    cache_seconds: float = 1.0
    loadbalancer_health: str = LB_REQUIRE  # `--loadbalancer-health`: how a LoadBalancer Service without ingress counts

    def auth(self) -> UiAuth | None:
        return UiAuth.load(self.auth_file) if self.auth_file else None


def redact_url(url: str) -> str:
    """A Git URL without credentials (user:token@ dropped), fit to show."""
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@", r"\1", url)


def ui_config(
    settings: UiSettings,
    api_client: ApiClient,
    scope: str | Collection[str] | None,
    source: Any = None,
    auth: UiAuth | None = None,
    record_namespace: str | None = None,
) -> UiConfig:
    """The UiConfig of a controller: reads with its client in its scope (its GitOpsKDSource in
    `record_namespace`); `source` (a GitSource) gives the repository, branch, applied and head commits and commit
    subjects."""
    reader = UiReader(api_client, scope, ttl=settings.cache_seconds, record_namespace=record_namespace)
    if source is None:
        return UiConfig(
            reader, auth=auth, refresh_seconds=settings.refresh_seconds, loadbalancer_health=settings.loadbalancer_health
        )

    def info() -> dict[str, Any]:
        return {
            "repo": redact_url(str(getattr(source, "url", ""))),
            "branch": getattr(source, "branch", None),
            "appliedCommit": getattr(source, "applied_commit", None),
            "headCommit": getattr(source, "last_polled", None),
        }

    def subject(sha: str) -> str | None:
        finder = getattr(source, "commit_subject", None)
        return finder(sha) if finder is not None else None

    def desired() -> dict[tuple[str, str], str]:
        state = getattr(source, "last_good", None)
        return {key: app.version for key, app in state.apps.items()} if state is not None else {}

    return UiConfig(
        reader,
        auth=auth,
        refresh_seconds=settings.refresh_seconds,
        info=info,
        subject=subject,
        desired=desired,
        loadbalancer_health=settings.loadbalancer_health,
    )
