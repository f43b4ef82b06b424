"""Compact informer objects: drop what gitops-kd never reads, deep-freeze once, hold equal strings once.

The collector's informers store each object as ``compact`` returns it (client-go's transform function,
as in its TransformStripManagedFields): managedFields are dropped, a Pod keeps only the fields the
observed model and the read-your-writes checks read (``pod_fields``), and the result is deep-frozen
with equal strings shared across objects (a KubeDirector pod template's init script, image names,
label keys and values, condition types). The observed models reference these frozen objects instead
of copying them (``freeze`` returns an already frozen value as is): one immutable copy of each object.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from gitops_kd.kd.layout import APP_CONTAINER
from gitops_kd.spec.freeze import freeze

POD_STATUS_FIELDS = ("phase", "conditions", "podIP")
"""The Pod status fields kept (read by observe.collector.observed_pod)."""

UNSHARED_KEYS = frozenset({"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "lastTransitionTime",
                           "lastProbeTime", "lastUpdateTime", "startTime", "startedAt", "finishedAt", "podIP", "ip",
                           "hostIP", "gateCheckedAt", "gateStartedAt", "readySince", "requestedAt"})
"""Keys whose values are unique to one object or one version of it: kept out of the table (never shared, and
each write would add entries)."""

MAX_SHARED = 1 << 17
"""Strings a SharedStrings table holds before it starts over (bounds its memory)."""

Transform = Callable[[dict[str, Any]], Mapping[str, Any]]


class SharedStrings:
    """A table of strings: ``share(key, text)`` returns the first string equal to ``text`` it was given, so
    equal strings of many objects are held once. Bounded: at ``limit`` entries it is emptied and fills
    again (objects already compacted keep their strings; only later ones stop sharing with them)."""

    def __init__(self, limit: int = MAX_SHARED) -> None:
        self._strings: dict[str, str] = {}
        self._limit = limit
        self._lock = threading.Lock()

    def share(self, key: Any, text: str) -> str:
        if key in UNSHARED_KEYS:
            return text
        found = self._strings.get(text)
        if found is not None:
            return found
        with self._lock:
            if len(self._strings) >= self._limit:
                self._strings.clear()
            return self._strings.setdefault(text, text)

    def __len__(self) -> int:
        return len(self._strings)

    def __contains__(self, text: object) -> bool:
        return text in self._strings


def compact(obj: Mapping[str, Any], strings: SharedStrings, *, pod: bool = False) -> Mapping[str, Any]:
    """``obj`` without managedFields (and, for a Pod, only its ``pod_fields``), deep-frozen, strings shared."""
    meta = obj.get("metadata") or {}
    if "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return freeze(pod_fields(obj) if pod else obj, strings.share)


def pod_fields(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a Pod gitops-kd reads: apiVersion, kind, metadata, the app container's name and image,
    and status.phase, conditions and podIP."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    containers = [{"name": c.get("name"), "image": c.get("image")}
                  for c in spec.get("containers") or () if c.get("name") == APP_CONTAINER]
    return {"apiVersion": pod.get("apiVersion"), "kind": pod.get("kind"), "metadata": pod.get("metadata") or {},
            "spec": {"containers": containers}, "status": {k: status[k] for k in POD_STATUS_FIELDS if k in status}}


def transform(strings: SharedStrings, *, pod: bool = False) -> Transform:
    """An informer transform that compacts every object with ``strings``."""
    def apply(obj: dict[str, Any]) -> Mapping[str, Any]:
        return compact(obj, strings, pod=pod)

    return apply
