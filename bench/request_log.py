"""Count the API requests one kubernetes ApiClient sends, by wrapping its connection pool's request().

The benchmark counts on the client side, for one ApiClient only: every call of the official client
(generated APIs, kubeplumb.rest.RestClient, informers' LIST and WATCH) goes through
`ApiClient.rest_client.pool_manager.request` (urllib3), which this wraps on that one instance.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kubernetes.client import ApiClient

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class Request:
    """One request: verb (list, watch, get, create, update, patch, delete), resource path parts, body."""

    at: float
    method: str
    verb: str
    plural: str
    namespace: str | None
    name: str | None
    subresource: str | None
    body: Any

    @property
    def write(self) -> bool:
        return self.method in WRITE_METHODS

    @property
    def resource(self) -> str:
        return self.plural + (f"/{self.subresource}" if self.subresource else "")

    def target(self) -> str:
        """The object written or read ("pods/kdss-c-0000-worker-1"); for an Event, its involved object."""
        if self.plural == "events" and isinstance(self.body, dict):
            involved = self.body.get("involvedObject") or self.body.get("regarding") or {}
            return f"events->{str(involved.get('kind', '')).lower()}/{involved.get('name')}"
        name = self.name
        if name is None and isinstance(self.body, dict):
            name = (self.body.get("metadata") or {}).get("name")
        return f"{self.resource}/{name}" if name else self.resource


def parse_path(path: str) -> tuple[str, str | None, str | None, str | None]:
    """(plural, namespace, name, subresource) of /api/v1/... or /apis/group/version/... paths."""
    parts = [p for p in path.split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    namespace = None
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    plural = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    return plural, namespace, name, sub


def _verb(method: str, name: str | None, query: dict[str, list[str]]) -> str:
    if method == "GET":
        if query.get("watch", ["false"])[0] in ("true", "1"):
            return "watch"
        return "get" if name else "list"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, method.lower())


class RequestLog:
    """Records every request of `api_client` from install() on; thread-safe."""

    def __init__(self, api_client: ApiClient) -> None:
        self.api_client = api_client
        self._lock = threading.Lock()
        self._requests: list[Request] = []
        self._original: Any = None

    def install(self) -> RequestLog:
        pool = self.api_client.rest_client.pool_manager
        self._original = pool.request

        def counted(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            self._record(method, url, kwargs.get("fields"), kwargs.get("body"))
            return self._original(method, url, *args, **kwargs)

        pool.request = counted
        return self

    def _record(self, method: str, url: str, query_params: Any, body: Any) -> None:
        split = urlsplit(url)
        query = parse_qs(split.query)
        pairs = query_params.items() if isinstance(query_params, dict) else (query_params or [])
        for key, value in pairs:
            query.setdefault(str(key), []).append(str(value))
        plural, namespace, name, sub = parse_path(split.path)
        if isinstance(body, (bytes, str)):
            try:
                body = json.loads(body)
            except ValueError:
                body = None
        req = Request(time.monotonic(), method.upper(), _verb(method.upper(), name, query), plural, namespace, name, sub, body)
        with self._lock:
            self._requests.append(req)

    def mark(self) -> int:
        """A position to count from (see since())."""
        with self._lock:
            return len(self._requests)

    def since(self, mark: int, until: int | None = None) -> list[Request]:
        with self._lock:
            return list(self._requests[mark:until])


def by_verb(requests: list[Request]) -> Counter[str]:
    """Counts by "verb resource", e.g. "list pods", "patch statefulsets"."""
    return Counter(f"{r.verb} {r.resource}" for r in requests)


def summary(requests: list[Request]) -> str:
    counts = by_verb(requests)
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "none"
