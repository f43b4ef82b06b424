"""ClusterIndex: the informers' objects grouped by KDCluster and KDApps by name, kept current from watch events."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from gitops_kd.kd.layout import CLUSTER_LABEL, controller_cluster
from gitops_kd.spec.state import Key
from kubeplumb.informer import DELETED

MEMBER_KINDS = ("statefulsets", "pods", "services")
"""Kinds whose objects belong to a KDCluster (owner_of)."""


class ClusterIndex:
    """Per-cluster lookups in O(objects of that cluster), updated by ``on_event`` (informer handlers).

    Holds references to the informers' objects (which the informers never modify: a change replaces
    the object), so it costs one dict entry per object."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clusters: dict[Key, Mapping[str, Any]] = {}
        self._rollouts: dict[Key, Mapping[str, Any]] = {}
        self._members: dict[Key, dict[str, dict[str, Mapping[str, Any]]]] = {}
        self._apps: dict[Key, Mapping[str, Any]] = {}
        self._apps_by_name: dict[str, set[Key]] = {}
        self._clusters_by_app: dict[str, set[Key]] = {}

    def on_event(self, kind: str, event: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        """Record one informer event of ``kind`` ("apps", "clusters", "rollouts" or a MEMBER_KINDS plural)."""
        gone = event == DELETED
        with self._lock:
            if kind == "apps":
                self._on_app(obj, old, gone)
            elif kind == "clusters":
                self._on_cluster(obj, old, gone)
            elif kind == "rollouts":
                if gone:
                    self._rollouts.pop(key_of(obj), None)
                else:
                    self._rollouts[key_of(obj)] = obj
            elif kind in MEMBER_KINDS:
                self._on_member(kind, obj, old, gone)

    def clusters_using(self, app: str) -> frozenset[Key]:
        """Live KDClusters whose spec.app is ``app``."""
        with self._lock:
            return frozenset(self._clusters_by_app.get(app, ()))

    def apps_named(self, name: str) -> frozenset[Key]:
        """Live KDApps named ``name`` (any namespace)."""
        with self._lock:
            return frozenset(self._apps_by_name.get(name, ()))

    def app(self, key: Key) -> Mapping[str, Any] | None:
        with self._lock:
            return self._apps.get(key)

    def cluster(self, key: Key) -> tuple[Mapping[str, Any], list[Any], list[Any], list[Any], Mapping[str, Any] | None] | None:
        """(KDCluster, its StatefulSets, Pods, Services each sorted by name, its KDRollout or None), or None."""
        with self._lock:
            raw = self._clusters.get(key)
            if raw is None:
                return None
            members = self._members.get(key, {})
            parts = [[obj for _, obj in sorted(members.get(kind, {}).items())] for kind in MEMBER_KINDS]
            return raw, parts[0], parts[1], parts[2], self._rollouts.get(key)

    def cluster_keys(self) -> frozenset[Key]:
        with self._lock:
            return frozenset(self._clusters)

    # -- internals (under the lock) ----------------------------------------------------------------
    def _on_app(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None, gone: bool) -> None:
        key = key_of(obj)
        if gone:
            self._apps.pop(key, None)
            _discard(self._apps_by_name, key[1], key)
        else:
            self._apps[key] = obj
            self._apps_by_name.setdefault(key[1], set()).add(key)

    def _on_cluster(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None, gone: bool) -> None:
        key = key_of(obj)
        if old is not None:
            _discard(self._clusters_by_app, app_of(old), key)
        if gone:
            self._clusters.pop(key, None)
            _discard(self._clusters_by_app, app_of(obj), key)
            return
        self._clusters[key] = obj
        self._clusters_by_app.setdefault(app_of(obj), set()).add(key)

    def _on_member(self, kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None, gone: bool) -> None:
        name = str(_meta(obj).get("name") or "")
        if old is not None and (was := owner_of(old)) is not None and (gone or was != owner_of(obj)):
            self._members.get(was, {}).get(kind, {}).pop(name, None)
        owner = owner_of(obj)
        if owner is None:
            return
        if gone:
            self._members.get(owner, {}).get(kind, {}).pop(name, None)
        else:
            self._members.setdefault(owner, {}).setdefault(kind, {})[name] = obj


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = _meta(obj)
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def app_of(cluster: Mapping[str, Any]) -> str:
    """A KDCluster's spec.app ("" when unset)."""
    return str((cluster.get("spec") or {}).get("app") or "")


def owner_of(obj: Mapping[str, Any]) -> Key | None:
    """The (namespace, KDCluster name) an object belongs to: the KDCluster of KubeDirector's controller
    ownerReference (a role StatefulSet or Service keeps it when its labels are removed), else the cluster label
    (a pod: its owner is the StatefulSet); None when neither names one."""
    meta = _meta(obj)
    cluster = controller_cluster(meta) or (meta.get("labels") or {}).get(CLUSTER_LABEL)
    return (str(meta.get("namespace") or ""), str(cluster)) if cluster else None


def _discard(index: dict[str, set[Key]], name: str, key: Key) -> None:
    keys = index.get(name)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[name]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


__all__ = ["ClusterIndex", "MEMBER_KINDS", "app_of", "key_of", "owner_of"]
