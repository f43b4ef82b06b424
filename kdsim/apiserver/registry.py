"""Registry of served resource types: built-ins plus whatever the stored CRDs declare."""

from __future__ import annotations

import threading
from typing import Any

from kdsim.apiserver.resources import BUILTIN_TYPES, ResourceType, types_from_crd


class Registry:
    """Thread-safe lookup of ResourceType by (group, version, plural) and by kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._builtin = list(BUILTIN_TYPES)
        self._crd_types: dict[str, list[ResourceType]] = {}  # CRD name -> its types

    def set_crd(self, crd: dict[str, Any]) -> None:
        """Serve (or re-serve, after an update) the resources of one CRD."""
        name = str((crd.get("metadata") or {}).get("name", ""))
        with self._lock:
            self._crd_types[name] = types_from_crd(crd)

    def remove_crd(self, name: str) -> None:
        with self._lock:
            self._crd_types.pop(name, None)

    def all(self) -> list[ResourceType]:
        with self._lock:
            out = list(self._builtin)
            for types in self._crd_types.values():
                out.extend(types)
            return out

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        for t in self.all():
            if t.group == group and t.version == version and t.plural == plural:
                return t
        return None

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        for t in self.all():
            if t.api_version == api_version and t.kind == kind:
                return t
        return None

    def versions_of(self, group: str, plural: str) -> list[ResourceType]:
        return [t for t in self.all() if t.group == group and t.plural == plural]

    def groups(self) -> dict[str, list[str]]:
        """Group name -> versions (storage/preferred first), excluding the core group."""
        out: dict[str, list[str]] = {}
        for t in self.all():
            if not t.group:
                continue
            versions = out.setdefault(t.group, [])
            if t.version not in versions:
                if t.storage:
                    versions.insert(0, t.version)
                else:
                    versions.append(t.version)
        return out
