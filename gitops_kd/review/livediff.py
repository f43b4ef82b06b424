"""Live vs Git per object and field with old and new values, from the plan's apply and patch actions and the
member Service ports the plan moves later, with their pods (pure)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitops_kd.constants import BREAK_GLASS_ANNOTATION
from gitops_kd.diff.model import DiffReport
from gitops_kd.kd.layout import KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.observed import ON_DELETE, ObservedState
from gitops_kd.plan.actions import (
    Action,
    ApplyApp,
    ApplyCluster,
    ClearBreakGlass,
    MarkUpgradable,
    PatchServicePorts,
    PatchTemplate,
    RestoreLabels,
    SetOnDelete,
    SwitchApp,
)
from gitops_kd.spec.freeze import thaw

LIST_KEYS = ("name", "id", "mountPath", "containerPort", "port")  # how list items are matched, first present
MAX_VALUE = 300  # characters of one value shown
DELETE_DIRECTIVE = ("$patch", "delete")  # a strategic merge patch list item that removes the live item


@dataclass(frozen=True)
class FieldDiff:
    path: str
    old: Any  # None: absent live
    new: Any  # None: absent in Git

    def describe(self, limit: int = MAX_VALUE) -> str:
        return f"{self.path}: {show(self.old, limit)} -> {show(self.new, limit)}"


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
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "create": self.create,
            "note": self.note or None,
            "fields": [{"path": f.path, "old": thaw(f.old), "new": thaw(f.new)} for f in self.fields],
        }


def show(value: Any, limit: int = MAX_VALUE) -> str:
    """`value` as compact JSON, cut to `limit` characters with the full length said ("(absent)" for None)."""
    if value is None:
        return "(absent)"
    text = json.dumps(thaw(value), sort_keys=True, default=str)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _keyed(items: Sequence[Any], key: str) -> bool:
    """True when every item is a map with `key`, no two with the same value (volumeMounts share names)."""
    values = [i.get(key) for i in items if isinstance(i, Mapping) and key in i]
    return len(values) == len(items) and len({json.dumps(v, sort_keys=True, default=str) for v in values}) == len(values)


def _list_key(desired: Sequence[Any], live: Sequence[Any]) -> str | None:
    """The first of LIST_KEYS that tells the items of both lists apart, or None (compared as whole values)."""
    if not desired:
        return None
    return next((k for k in LIST_KEYS if _keyed(desired, k) and _keyed(live, k)), None)


def _child(path: str, key: Any) -> str:
    """`path.key`, or `path[key]` for a key that is itself dotted or has a slash (annotations, labels)."""
    text = str(key)
    if "." in text or "/" in text:
        return f"{path}[{text}]"
    return f"{path}.{text}" if path else text


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, (Mapping, list, tuple)) and not value)


def field_diffs(live: Any, desired: Any, path: str = "", *, removals: bool = True) -> list[FieldDiff]:
    """Each leaf of `desired` whose live value differs. List items are matched by the first of name / id /
    mountPath / containerPort / port that is unique in both lists; a whole item or map missing live is one value;
    items only live are listed as removed when `removals`, and items a patch deletes (`$patch: delete`) always;
    other "$" keys (patch directives) are skipped; absent and empty ({} / []) are the same."""
    if _empty(live) and _empty(desired):
        return []
    if isinstance(desired, Mapping):
        if live is None and path:
            return [FieldDiff(path, None, desired)]
        if live is not None and not isinstance(live, Mapping):
            return [FieldDiff(path, live, desired)]
        out: list[FieldDiff] = []
        for k, v in desired.items():
            if not str(k).startswith("$"):
                out += field_diffs(live.get(k) if live else None, v, _child(path, k), removals=removals)
        return out
    if isinstance(desired, (list, tuple)):
        key = _list_key(desired, live) if isinstance(live, (list, tuple)) else None
        if key is not None:
            return _list_diffs(live, desired, key, path, removals)
    if thaw(live) != thaw(desired):
        return [FieldDiff(path, live, desired)]
    return []


def _list_diffs(
    live: Sequence[Mapping[str, Any]], desired: Sequence[Mapping[str, Any]], key: str, path: str, removals: bool
) -> list[FieldDiff]:
    by_key = {i.get(key): i for i in live}
    out: list[FieldDiff] = []
    for item in desired:
        where = f"{path}[{item.get(key)}]"
        if item.get(DELETE_DIRECTIVE[0]) == DELETE_DIRECTIVE[1]:
            if item.get(key) in by_key:
                out.append(FieldDiff(where, by_key[item.get(key)], None))
            continue
        out += field_diffs(by_key.get(item.get(key)), item, where, removals=removals)
    if removals:
        wanted = {i.get(key) for i in desired}
        out += [FieldDiff(f"{path}[{k}]", v, None) for k, v in by_key.items() if k not in wanted]
    return out


def action_diff(action: Action, observed: ObservedState) -> ObjectDiff | None:
    """The object `action` writes and each field it changes (live and Git values) as read in `observed`; None
    for actions that change no object field (rollout bookkeeping, pod deletions, steps, waits)."""
    a = action
    if isinstance(a, ApplyApp):
        app = observed.apps.get((a.namespace, a.name))
        return _spec_diff(KDAPP_KIND, a.namespace, a.name, app.raw if app is not None else None, a.body)
    if isinstance(a, ApplyCluster):
        cluster = observed.clusters.get((a.namespace, a.name))
        return _spec_diff(KDCLUSTER_KIND, a.namespace, a.name, cluster.raw if cluster is not None else None, a.body)
    if isinstance(a, (PatchTemplate, SetOnDelete)):
        sts = next(
            (
                s
                for c in observed.clusters.values()
                for s in c.statefulsets.values()
                if (s.namespace, s.name) == (a.namespace, a.statefulset)
            ),
            None,
        )
        note = f"cluster {a.cluster}, role {a.role}"
        if isinstance(a, SetOnDelete):
            return ObjectDiff(
                "StatefulSet",
                a.namespace,
                a.statefulset,
                (FieldDiff("spec.updateStrategy.type", sts.update_strategy if sts is not None else None, ON_DELETE),),
                note=note,
            )
        fields = field_diffs(
            sts.template if sts is not None else None, a.patch_body["spec"]["template"], "spec.template", removals=False
        )
        return ObjectDiff("StatefulSet", a.namespace, a.statefulset, tuple(fields), note=note)
    if isinstance(a, RestoreLabels):
        sts = next(
            (
                s
                for c in observed.clusters.values()
                for s in c.statefulsets.values()
                if (s.namespace, s.name) == (a.namespace, a.statefulset)
            ),
            None,
        )
        have = ((sts.raw.get("metadata") or {}).get("labels") or {}) if sts is not None else {}
        return ObjectDiff(
            "StatefulSet",
            a.namespace,
            a.statefulset,
            tuple(FieldDiff(f"metadata.labels[{k}]", have.get(k), v) for k, v in a.labels),
            note=f"cluster {a.cluster}, role {a.role}",
        )
    if isinstance(a, ClearBreakGlass):
        return ObjectDiff(
            a.kind,
            a.namespace,
            a.name,
            (FieldDiff(f"metadata.annotations[{BREAK_GLASS_ANNOTATION}]", a.reason, None),),
            note=f"cluster {a.cluster}: a break-glass counts for one request",
        )
    if isinstance(a, SwitchApp):
        return ObjectDiff(
            KDCLUSTER_KIND,
            a.namespace,
            a.cluster,
            (FieldDiff("spec.app", a.previous, a.app),),
            note="KubeDirector's live-app-upgrade switch",
        )
    if isinstance(a, MarkUpgradable):
        live_app = observed.apps.get((a.namespace, a.app))
        return ObjectDiff(
            KDAPP_KIND,
            a.namespace,
            a.app,
            (FieldDiff("spec.upgradable", live_app.spec.get("upgradable") if live_app is not None else None, True),),
            note=f"the app cluster {a.cluster} leaves by a switch",
        )
    if isinstance(a, PatchServicePorts):
        svc = next(
            (s for c in observed.clusters.values() for s in c.services if (s.namespace, s.name) == (a.namespace, a.service)), None
        )
        return ObjectDiff(
            "Service",
            a.namespace,
            a.service,
            tuple(field_diffs(list(svc.ports) if svc is not None else None, a.ports_body, "spec.ports")),
            note=f"cluster {a.cluster}",
        )
    return None


def live_diff(actions: Iterable[Action], observed: ObservedState) -> list[ObjectDiff]:
    """The objects the plan's ApplyApp / ApplyCluster / PatchTemplate / PatchServicePorts / RestoreLabels /
    ClearBreakGlass would change, with
    every field that differs (old and new values), in plan order."""
    found = (action_diff(a, observed) for a in actions if not isinstance(a, SetOnDelete))
    return [d for d in found if d is not None and (d.create or d.fields)]


def later_service_ports(report: DiffReport, observed: ObservedState, actions: Iterable[Action]) -> list[ObjectDiff]:
    """Member Services whose ports differ from Git and that the plan does not patch yet: each moves with its own
    pod, once that pod is replaced (plan/services.py), and differs from Git until then."""
    planned = {(a.namespace, a.service) for a in actions if isinstance(a, PatchServicePorts)}
    out: list[ObjectDiff] = []
    for c in report.clusters:
        live = observed.clusters.get(c.key)
        if live is None:
            continue
        for p in c.ports:
            if (c.key[0], p.service) in planned:
                continue
            svc = next((s for s in live.services if s.name == p.service), None)
            want = [{"name": n, "port": port} for n, port in p.ports]
            fields = tuple(field_diffs(list(svc.ports) if svc is not None else None, want, "spec.ports"))
            pod = svc.pod if svc is not None else None
            note = f"cluster {c.key[1]}; moves when its pod {pod} is replaced" if pod else f"cluster {c.key[1]}"
            if fields:
                out.append(ObjectDiff("Service", c.key[0], p.service, fields, note=note))
    return out


def _spec_diff(kind: str, namespace: str, name: str, live: Mapping[str, Any] | None, manifest: Mapping[str, Any]) -> ObjectDiff:
    if live is None:
        return ObjectDiff(kind, namespace, name, create=True)
    fields = field_diffs(live.get("spec"), manifest.get("spec"), "spec")
    fields += field_diffs(
        (live.get("metadata") or {}).get("labels"),
        (manifest.get("metadata") or {}).get("labels"),
        "metadata.labels",
        removals=False,
    )
    return ObjectDiff(kind, namespace, name, tuple(fields))
