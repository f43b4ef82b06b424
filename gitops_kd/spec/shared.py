"""SharedValues: a bounded table that holds equal frozen values once (pure; the informer caches' and the diff
memos' deduplication)."""

from __future__ import annotations

import threading
from typing import Any

from gitops_kd.spec.freeze import FrozenMap

UNSHARED_KEYS = frozenset(
    {
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "lastTransitionTime",
        "lastProbeTime",
        "lastUpdateTime",
        "startTime",
        "startedAt",
        "finishedAt",
        "podIP",
        "ip",
        "hostIP",
        "gateCheckedAt",
        "gateStartedAt",
        "readySince",
        "requestedAt",
    }
)
"""Keys whose values are unique to one object or one version of it: kept out of the table (never shared, and
each write would add entries)."""

MAX_SHARED = 1 << 17
"""Values a SharedValues table holds before it starts over (bounds its memory)."""


class SharedValues:
    """A table of frozen values: ``share(key, value)`` returns the first value equal to ``value`` it was given,
    so equal strings, and equal mappings and sequences, of many objects are held once (KubeDirector's pod
    templates of one app differ in a few labels only). A mapping or sequence is shared only when everything
    in it is: strings, integers, None and shared mappings and sequences, so two shared values are equal only
    when they are the same JSON (True == 1 in Python: a bool or float inside keeps a value out), and nothing
    unique to one object version (UNSHARED_KEYS) ever enters the table. Bounded: at ``limit`` entries it is
    emptied and fills again (objects already compacted keep their values; only later ones stop sharing)."""

    def __init__(self, limit: int = MAX_SHARED) -> None:
        self._values: dict[Any, Any] = {}
        self._limit = limit
        self._lock = threading.Lock()

    def share(self, key: Any, value: Any) -> Any:
        if key in UNSHARED_KEYS or (type(value) is not str and not self._shareable(value)):
            return value
        found = self._values.get(value)
        if found is not None:
            return found
        with self._lock:
            if len(self._values) >= self._limit:
                self._values.clear()
            return self._values.setdefault(value, value)

    def _shareable(self, value: Any) -> bool:
        if isinstance(value, FrozenMap):
            return all(k not in UNSHARED_KEYS and self._held(v) for k, v in value.items())
        return isinstance(value, tuple) and all(self._held(v) for v in value)

    def _held(self, value: Any) -> bool:
        """A plain string, integer or None, or a mapping or sequence that is the table's own."""
        kind = type(value)
        if kind is str or kind is int or value is None:
            return True
        return (kind is FrozenMap or kind is tuple) and self._values.get(value) is value

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, value: object) -> bool:
        return value in self._values
