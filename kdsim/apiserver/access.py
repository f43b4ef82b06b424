"""Access log: who asked for what (user, verb, group, resource, subresource), for RBAC checks in tests."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class AccessEntry:
    """One resource request, named as RBAC names it. `user` is the bearer token (tokens are not checked,
    so a token is how a test tells one client from another)."""

    user: str
    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def rbac_resource(self) -> str:
        """`pods` or `pods/exec`: the resource string a PolicyRule lists."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def user_from_authorization(header: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header ("" when absent or not a bearer token)."""
    if not header:
        return ""
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class AccessLog:
    """Thread-safe, bounded (oldest dropped first) list of AccessEntry."""

    def __init__(self, limit: int = 200_000) -> None:
        self._lock = threading.Lock()
        self._entries: list[AccessEntry] = []
        self._limit = limit

    def record(self, entry: AccessEntry) -> None:
        with self._lock:
            self._entries.append(entry)
            if len(self._entries) > self._limit:
                del self._entries[: len(self._entries) - self._limit]

    def entries(self, user: str | None = None) -> list[AccessEntry]:
        """All entries so far, or only those of one user (bearer token)."""
        with self._lock:
            return [e for e in self._entries if user is None or e.user == user]

    def reset(self) -> None:
        with self._lock:
            self._entries.clear()
