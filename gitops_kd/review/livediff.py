"""Live vs Git per object and field with old and new values, from the plan's apply and patch actions (pure)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitops_kd.kd.layout import KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.observe.model import ObservedState
from gitops_kd.plan.actions import Action, ApplyApp, ApplyCluster, PatchServicePorts, PatchTemplate
from gitops_kd.spec.freeze import thaw

LIST_KEYS = ("name", "id", "mountPath", "containerPort", "port")  # how list items are matched, first present
MAX_VALUE = 300  # characters of one value shown


@dataclass(frozen=True)
class FieldDiff:
    path: str
    old: Any  # None: absent live
    new: Any  # None: absent in Git

    def describe(self) -> str:
        return f"{self.path}: {show(self.old)} -> {show(self.new)}"


@dataclass(frozen=True)
class ObjectDiff:
    """One object that differs: created when it does not exist live, else its fields."""

    kind: str
    namespace: str
    name: str
    fields: tuple[FieldDiff, ...] = ()
    create: bool = False
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name, "create": self.create,
                "note": self.note or None,
                "fields": [{"path": f.path, "old": thaw(f.old), "new": thaw(f.new)} for f in self.fields]}


def show(value: Any) -> str:
    if value is None:
        return "(absent)"
    text = json.dumps(thaw(value), sort_keys=True, default=str)
    return text if len(text) <= MAX_VALUE else f"{text[:MAX_VALUE]}… ({len(text)} characters)"


def _list_key(items: Sequence[Any]) -> str | None:
    if not items or not all(isinstance(i, Mapping) for i in items):
        return None
    return next((k for k in LIST_KEYS if all(k in i for i in items)), None)


def field_diffs(live: Any, desired: Any, path: str = "", *, removals: bool = True) -> list[FieldDiff]:
    """Each leaf of `desired` whose live value differs; list items matched by name / id / mountPath / port
    (items only live are listed as removed when `removals`); keys starting with "$" (patch directives) skipped."""
    out: list[FieldDiff] = []
    if isinstance(desired, Mapping):
        if live is not None and not isinstance(live, Mapping):
            return [FieldDiff(path, live, desired)]
        have = live or {}
        for k, v in desired.items():
            if not str(k).startswith("$"):
                out += field_diffs(have.get(k), v, f"{path}.{k}" if path else str(k), removals=removals)
        return out
    if isinstance(desired, (list, tuple)):
        key = _list_key(desired)
        if key is not None and isinstance(live, (list, tuple)) and (not live or _list_key(live) == key):
            by_key = {i.get(key): i for i in live}
            for item in desired:
                out += field_diffs(by_key.get(item[key]), item, f"{path}[{item[key]}]", removals=removals)
            wanted = {i[key] for i in desired}
            if removals:
                out += [FieldDiff(f"{path}[{k}]", v, None) for k, v in by_key.items() if k not in wanted]
            return out
    if thaw(live) != thaw(desired):
        out.append(FieldDiff(path, live, desired))
    return out


def live_diff(actions: Iterable[Action], observed: ObservedState) -> list[ObjectDiff]:
    """The objects the plan's ApplyApp / ApplyCluster / PatchTemplate / PatchServicePorts would change, with
    every field that differs (old and new values), in plan order."""
    out: list[ObjectDiff] = []
    for a in actions:
        if isinstance(a, ApplyApp):
            app = observed.apps.get((a.namespace, a.name))
            out.append(_spec_diff(KDAPP_KIND, a.namespace, a.name, app.raw if app is not None else None, a.body))
        elif isinstance(a, ApplyCluster):
            cluster = observed.clusters.get((a.namespace, a.name))
            out.append(_spec_diff(KDCLUSTER_KIND, a.namespace, a.name, cluster.raw if cluster is not None else None,
                                  a.body))
        elif isinstance(a, PatchTemplate):
            sts = next((s for c in observed.clusters.values() for s in c.statefulsets.values()
                        if (s.namespace, s.name) == (a.namespace, a.statefulset)), None)
            fields = field_diffs(sts.template if sts is not None else None, a.patch_body["spec"]["template"],
                                 "spec.template", removals=False)
            out.append(ObjectDiff("StatefulSet", a.namespace, a.statefulset, tuple(fields),
                                  note=f"cluster {a.cluster}, role {a.role}"))
        elif isinstance(a, PatchServicePorts):
            svc = next((s for c in observed.clusters.values() for s in c.services
                        if (s.namespace, s.name) == (a.namespace, a.service)), None)
            out.append(ObjectDiff("Service", a.namespace, a.service, tuple(
                field_diffs(list(svc.ports) if svc is not None else None, a.ports_body, "spec.ports")),
                note=f"cluster {a.cluster}"))
    return [d for d in out if d.create or d.fields]


def _spec_diff(kind: str, namespace: str, name: str, live: Mapping[str, Any] | None,
               manifest: Mapping[str, Any]) -> ObjectDiff:
    if live is None:
        return ObjectDiff(kind, namespace, name, create=True)
    fields = field_diffs(live.get("spec"), manifest.get("spec"), "spec")
    fields += field_diffs((live.get("metadata") or {}).get("labels"), (manifest.get("metadata") or {}).get("labels"),
                          "metadata.labels", removals=False)
    return ObjectDiff(kind, namespace, name, tuple(fields))
