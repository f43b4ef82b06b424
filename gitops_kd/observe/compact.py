"""Compact informer objects: drop what gitops-kd never reads, deep-freeze once, hold equal values once.

The collector's informers store each object as ``compact`` returns it (client-go's transform function,
as in its TransformStripManagedFields): managedFields are dropped, a Pod keeps only the fields the
observed model and the read-your-writes checks read (``pod_fields``), and the result is deep-frozen
with equal values shared across objects (a KubeDirector pod template's init script, its containers and
volumes, label keys and values, a cluster's role specs). The observed models reference these frozen objects instead
of copying them (``freeze`` returns an already frozen value as is): one immutable copy of each object.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, cast

from gitops_kd.kd.layout import APP_CONTAINER
from gitops_kd.spec.freeze import FrozenMap, freeze
from kubeplumb.informer import Transform

POD_STATUS_FIELDS = ("phase", "conditions", "podIP")
"""The Pod status fields kept (read by observe.collector.observed_pod)."""

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


def compact(obj: Mapping[str, Any], shared: SharedValues, *, pod: bool = False) -> Mapping[str, Any]:
    """``obj`` without managedFields (and, for a Pod, only its ``pod_fields``), deep-frozen, equal values shared."""
    meta = obj.get("metadata") or {}
    if "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return cast(Mapping[str, Any], freeze(pod_fields(obj) if pod else obj, shared.share))


def pod_fields(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a Pod gitops-kd reads: apiVersion, kind, metadata, the app container's name and image,
    and status.phase, conditions and podIP."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    containers = [
        {"name": c.get("name"), "image": c.get("image")} for c in spec.get("containers") or () if c.get("name") == APP_CONTAINER
    ]
    return {
        "apiVersion": pod.get("apiVersion"),
        "kind": pod.get("kind"),
        "metadata": pod.get("metadata") or {},
        "spec": {"containers": containers},
        "status": {k: status[k] for k in POD_STATUS_FIELDS if k in status},
    }


def transform(shared: SharedValues, *, pod: bool = False) -> Transform:
    """An informer transform that compacts every object with ``shared``."""

    def apply(obj: dict[str, Any]) -> Mapping[str, Any]:
        return compact(obj, shared, pod=pod)

    return apply
