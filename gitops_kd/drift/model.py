"""Drift value objects: one FieldChange per differing field, one Drift per drifted object (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gitops_kd.kd.layout import API_VERSION, KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.kd.layout import SERVICE_KIND as SERVICE
from gitops_kd.kd.layout import STATEFULSET_KIND as STATEFULSET
from gitops_kd.spec.freeze import freeze, thaw

KINDS = (STATEFULSET, SERVICE, KDAPP_KIND, KDCLUSTER_KIND)
API_VERSIONS = {STATEFULSET: "apps/v1", SERVICE: "v1", KDAPP_KIND: API_VERSION, KDCLUSTER_KIND: API_VERSION}

ObjectKey = tuple[str, str, str]
"""(kind, namespace, name) of a drifted object."""


@dataclass(frozen=True)
class FieldChange:
    """A field gitops-kd owns whose live value differs from Git: ``expected`` is what Git renders, ``actual``
    what the cluster has (None = absent). ``path`` uses dotted names with ``[key]`` for list items keyed by
    name/port/mountPath and map keys with dots, e.g. ``spec.template.spec.containers[app].image``."""

    path: str
    expected: Any
    actual: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "expected", freeze(self.expected) if self.expected is not None else None)
        object.__setattr__(self, "actual", freeze(self.actual) if self.actual is not None else None)

    def describe(self) -> str:
        return f"{self.path}: {_short(self.expected)} -> {_short(self.actual)}"

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "expected": thaw(self.expected), "actual": thaw(self.actual)}


@dataclass(frozen=True)
class Drift:
    """An object whose owned fields differ from Git at ``commit``. ``cluster`` is the owning KDCluster's
    name (None for a KDApp); ``fields`` are sorted by path; ``uid`` is the live object's (for Events)."""

    kind: str
    namespace: str
    name: str
    cluster: str | None
    fields: tuple[FieldChange, ...]
    commit: str
    uid: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"drift kind {self.kind!r}: must be one of {', '.join(KINDS)}")
        object.__setattr__(self, "fields", tuple(sorted(self.fields, key=lambda f: f.path)))

    @property
    def key(self) -> ObjectKey:
        return (self.kind, self.namespace, self.name)

    @property
    def cluster_key(self) -> tuple[str, str] | None:
        return (self.namespace, self.cluster) if self.cluster else None

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.fields)

    def describe(self) -> str:
        """One human line: the object, then each field as ``path: expected -> actual``."""
        return f"{self.kind} {self.namespace}/{self.name}: " + "; ".join(f.describe() for f in self.fields)


def _short(value: Any, limit: int = 120) -> str:
    text = "<absent>" if value is None else repr(thaw(value)) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 3] + "..."


def object_ref(drift: Drift) -> dict[str, Any]:
    """The drifted object as a minimal object dict (apiVersion, kind, metadata) for Events and payloads."""
    meta: dict[str, Any] = {"namespace": drift.namespace, "name": drift.name}
    if drift.uid:
        meta["uid"] = drift.uid
    return {"apiVersion": API_VERSIONS[drift.kind], "kind": drift.kind, "metadata": meta}
