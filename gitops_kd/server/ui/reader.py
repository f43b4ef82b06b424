"""Reads what the UI shows from the API server with the controller's own client (so the UI can show nothing
its RBAC cannot read), through gitops_kd.observe.fleet like `gitops-kd status`; cached for ``ttl`` seconds so
many open pages cost the API server one set of LISTs per interval. Secrets are never read."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from gitops_kd.kd import layout
from gitops_kd.observe.fleet import Fleet, fetch
from gitops_kd.observe.sources import read_sources
from gitops_kd.status.sync import NamedSource
from kubeplumb.rest import RestClient

Obj = dict[str, Any]


@dataclass
class Snapshot:
    """One read of the fleet: the managed clusters' objects, the KDApps, the Events (empty when RBAC forbids
    listing them), the GitOpsKDSources (the records sync is judged against, as `gitops-kd status` judges it) and
    which kinds could not be listed."""

    fleet: Fleet
    kdapps: list[Obj]
    events: list[Obj]
    forbidden: list[str] = field(default_factory=list)
    read_at: float = 0.0
    sources: list[NamedSource] = field(default_factory=list)

    def kdapp(self, namespace: str, name: str) -> Obj | None:
        return next(
            (
                a
                for a in self.kdapps
                if (a.get("metadata") or {}).get("namespace") == namespace and (a.get("metadata") or {}).get("name") == name
            ),
            None,
        )


def _namespaces(scope: str | Collection[str] | None) -> list[str | None]:
    if scope is None:
        return [None]
    if isinstance(scope, str):
        return [scope]
    out: list[str | None] = [*sorted(scope)]
    return out


def _merge(parts: Iterable[Fleet]) -> Fleet:
    parts = list(parts)
    if len(parts) == 1:
        return parts[0]
    merged = Fleet([], {}, {}, {}, [])
    for part in parts:
        merged.keys.extend(part.keys)
        merged.rollouts.update(part.rollouts)
        merged.kdclusters.update(part.kdclusters)
        for kind, grouped in part.members.items():
            merged.members.setdefault(kind, {}).update(grouped)
        merged.forbidden.extend(k for k in part.forbidden if k not in merged.forbidden)
    merged.keys.sort()
    return merged


class UiReader:
    """Snapshots of the fleet in the controller's scope (one namespace, a set of them, or None: all)."""

    def __init__(
        self,
        api_client: ApiClient,
        scope: str | Collection[str] | None,
        *,
        ttl: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        record_namespace: str | None = None,
    ) -> None:
        self.rest = RestClient(api_client, timeout=10.0)
        self.namespaces = _namespaces(scope)
        self.record_namespace = record_namespace  # where the controller's GitOpsKDSource lives
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._last: Snapshot | None = None

    def in_scope(self, namespace: str) -> bool:
        return None in self.namespaces or namespace in self.namespaces

    def snapshot(self) -> Snapshot:
        with self._lock:
            now = self._clock()
            if self._last is not None and now - self._last.read_at < self.ttl:
                return self._last
            self._last = self._read(now)
            return self._last

    def _read(self, now: float) -> Snapshot:
        fleet = _merge(fetch(self.rest, ns, tolerate_forbidden=True) for ns in self.namespaces)
        forbidden = list(fleet.forbidden)
        kdapps: list[Obj] = []
        events: list[Obj] = []
        for ns in self.namespaces:
            kdapps.extend(self._list(layout.API_VERSION, layout.KDAPP_PLURAL, ns, forbidden))
            events.extend(self._list("v1", "events", ns, forbidden))
        where = self.record_namespace or next((ns for ns in self.namespaces if ns), "default")
        sources, _note = read_sources(self.rest, where)
        return Snapshot(fleet, kdapps, events, forbidden, now, sources)

    def _list(self, api_version: str, plural: str, namespace: str | None, forbidden: list[str]) -> list[Obj]:
        try:
            return list(self.rest.list(api_version, plural, namespace).get("items") or [])
        except ApiException as exc:
            if exc.status in (401, 403):
                if plural not in forbidden:
                    forbidden.append(plural)
                return []
            raise
