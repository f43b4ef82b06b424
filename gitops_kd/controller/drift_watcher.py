"""DriftWatcher: informer handlers that trigger an immediate reconcile when an owned field is edited.

Watch, not only poll: on a MODIFIED event of a StatefulSet (spec.template, spec.updateStrategy, KubeDirector's
kdcluster and role labels), Service (spec.ports), KubeDirectorApp or KubeDirectorCluster (spec, labels,
annotations) whose owned part differs between the old and new object, ``trigger(kind, key)`` is called at once —
key is the owning cluster's (namespace, name) from KubeDirector's controller ownerReference, else label
``kubedirector.hpe.com/kdcluster`` (observe/index.owner_of; the KDCluster's own key; the KDApp's key with kind
"app"). Status-only writes, replica changes and resyncs (same object) trigger nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gitops_kd.kd.layout import KD_LABELS, KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.kd.layout import SERVICE_KIND as SERVICE
from gitops_kd.kd.layout import STATEFULSET_KIND as STATEFULSET
from gitops_kd.observe.index import owner_of
from kubeplumb.informer import MODIFIED, Informer

if TYPE_CHECKING:
    from gitops_kd.observe.collector import Collector
    from gitops_kd.observe.fanout import NamespacedInformers

log = logging.getLogger(__name__)

Trigger = Callable[[str, tuple[str, str]], None]
"""trigger(kind, key): kind "cluster" (key = the KDCluster) or "app" (key = the KDApp)."""

# Collector informer names -> kinds.
COLLECTOR_KINDS = {"statefulsets": STATEFULSET, "services": SERVICE, "apps": KDAPP_KIND, "clusters": KDCLUSTER_KIND}


def owned_part(kind: str, obj: Mapping[str, Any]) -> Any:
    """The part of an object whose change may be drift (compared between old and new)."""
    spec = obj.get("spec") or {}
    meta = obj.get("metadata") or {}
    if kind == STATEFULSET:
        return (spec.get("template"), spec.get("updateStrategy"), tuple((meta.get("labels") or {}).get(k) for k in KD_LABELS))
    if kind == SERVICE:
        return spec.get("ports")
    return (spec, meta.get("labels"), meta.get("annotations"))


def owner_key(kind: str, obj: Mapping[str, Any]) -> tuple[str, tuple[str, str]] | None:
    """("cluster"|"app", (namespace, name)) for an object, or None when it has no owning cluster."""
    meta = obj.get("metadata") or {}
    ns = str(meta.get("namespace") or "")
    if kind == KDAPP_KIND:
        return "app", (ns, str(meta.get("name")))
    if kind == KDCLUSTER_KIND:
        return "cluster", (ns, str(meta.get("name")))
    owner = owner_of(obj)
    return ("cluster", owner) if owner is not None else None


class DriftWatcher:
    """Filters informer events down to owned-field edits and calls ``trigger``. Thread-safe, quick."""

    def __init__(self, trigger: Trigger) -> None:
        self._trigger = trigger
        self._lock = threading.Lock()
        self.triggered = 0
        self.last_trigger: tuple[str, str, str, float] | None = None  # (kind, namespace, name, monotonic)

    def handler(self, kind: str) -> Callable[[str, dict[str, Any], dict[str, Any] | None], None]:
        """An Informer handler for objects of ``kind`` (StatefulSet, Service, KubeDirectorApp/Cluster)."""
        if kind not in COLLECTOR_KINDS.values():
            raise ValueError(f"DriftWatcher: cannot watch {kind!r} (one of {', '.join(COLLECTOR_KINDS.values())})")

        def on_event(event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            if event != MODIFIED or old is None or old is obj:
                return
            if owned_part(kind, old) == owned_part(kind, obj):
                return
            owner = owner_key(kind, obj)
            if owner is None:
                return
            meta = obj.get("metadata") or {}
            with self._lock:
                self.triggered += 1
                self.last_trigger = (kind, str(meta.get("namespace") or ""), str(meta.get("name")), time.monotonic())
            log.debug(
                "owned fields of %s %s/%s changed: reconciling %s %s/%s",
                kind,
                meta.get("namespace"),
                meta.get("name"),
                owner[0],
                *owner[1],
            )
            self._trigger(*owner)

        return on_event

    def attach(self, informer: Informer | NamespacedInformers, kind: str) -> None:
        informer.add_handler(self.handler(kind))

    def attach_collector(self, collector: Collector) -> None:
        """Attach to a Collector's informers."""
        informers = collector.informers
        for name, kind in COLLECTOR_KINDS.items():
            self.attach(informers[name], kind)
