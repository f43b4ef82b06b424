"""Compact informer objects: drop what gitops-kd never reads, deep-freeze once, hold equal values once.

The collector's informers store each object as ``compact`` returns it (client-go's transform function,
as in its TransformStripManagedFields): managedFields are dropped, a Pod keeps only the fields the
observed model and the read-your-writes checks read (``pod_fields``), and the result is deep-frozen
with equal values shared across objects (a KubeDirector pod template's init script, its containers and
volumes, label keys and values, a cluster's role specs). The observed models reference these frozen objects instead
of copying them (``freeze`` returns an already frozen value as is): one immutable copy of each object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from gitops_kd.kd.layout import APP_CONTAINER
from gitops_kd.spec.freeze import freeze
from gitops_kd.spec.shared import SharedValues
from gitops_kd.status.conditions import READY
from kubeplumb.informer import Transform

POD_STATUS_FIELDS = ("phase", "conditions", "podIP")
"""The Pod status fields kept (read by observe.collector.observed_pod); of the conditions only Ready, the one
gitops-kd reads (readiness and since when): the others, each with a timestamp of its own, were a third of a Pod."""


def compact(obj: Mapping[str, Any], shared: SharedValues, *, pod: bool = False) -> Mapping[str, Any]:
    """``obj`` without managedFields (and, for a Pod, only its ``pod_fields``), deep-frozen, equal values shared."""
    meta = obj.get("metadata") or {}
    if "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return cast(Mapping[str, Any], freeze(pod_fields(obj) if pod else obj, shared.share))


def pod_fields(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a Pod gitops-kd reads: apiVersion, kind, metadata, the app container's name, image and ports
    (what its member Service must target), and status.phase, the Ready condition and podIP."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    containers = [
        {"name": c.get("name"), "image": c.get("image"), "ports": c.get("ports") or []}
        for c in spec.get("containers") or ()
        if c.get("name") == APP_CONTAINER
    ]
    return {
        "apiVersion": pod.get("apiVersion"),
        "kind": pod.get("kind"),
        "metadata": pod.get("metadata") or {},
        "spec": {"containers": containers},
        "status": {k: _ready_only(status[k]) if k == "conditions" else status[k] for k in POD_STATUS_FIELDS if k in status},
    }


def _ready_only(conditions: Any) -> list[Any]:
    return [c for c in conditions or () if isinstance(c, Mapping) and c.get("type") == READY]


def transform(shared: SharedValues, *, pod: bool = False) -> Transform:
    """An informer transform that compacts every object with ``shared``."""

    def apply(obj: dict[str, Any]) -> Mapping[str, Any]:
        return compact(obj, shared, pod=pod)

    return apply
