"""Admission: whether an UPDATE/DELETE request may change what gitops-kd owns (pure; the webhook's rule).

The owned fields are drift's (detect.py): a role StatefulSet's owned pod-template fields and updateStrategy,
a member Service's ports, and the labels, annotations and spec Git gives a KDApp or KDCluster (the ignore
rules drop fields on top). A request is denied when it changes one of them to a value Git does not have;
edits that leave owned fields alone (replicas, ownerReferences, status, other labels), or put a Git value
back, pass. DELETE of a KDApp or KDCluster that Git declares, or of one of its StatefulSets or member Services,
is denied; so is removing or changing KubeDirector's labels on them (a StatefulSet or Service without its labels
is still found by its controller ownerReference). Always allowed: gitops-kd's own users; KubeDirector's users for
the fields it owns (replicas, ownerReferences, finalizers: never owned here); a break-glass (a user in a
break-glass group, or an UPDATE setting the break-glass annotation to a new value; an annotation left on the
object is no break-glass, a DELETE takes the group): allowed, with ``break_glass`` set so the caller audits it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitops_kd.constants import BREAK_GLASS_ANNOTATION
from gitops_kd.diff.engine import app_for, app_manifest, cluster_manifest
from gitops_kd.diff.transition import transition
from gitops_kd.drift import paths
from gitops_kd.drift.compare import missing_or_changed_stored
from gitops_kd.drift.detect import UPDATE_STRATEGY
from gitops_kd.drift.rules import IgnoreRules
from gitops_kd.kd import layout
from gitops_kd.kd.layout import KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.kd.layout import SERVICE_KIND as SERVICE
from gitops_kd.kd.layout import STATEFULSET_KIND as STATEFULSET
from gitops_kd.observed import ON_DELETE, ObservedState
from gitops_kd.render.compare import owned_differences
from gitops_kd.render.template import owned_template, service_ports
from gitops_kd.spec.state import DesiredState

# kube-controller-manager's garbage collector (with and without --use-service-account-credentials): its DELETE of
# a StatefulSet or Service follows the deletion of the owning KDCluster, which admission already judged
GARBAGE_COLLECTORS = frozenset({"system:serviceaccount:kube-system:generic-garbage-collector", "system:kube-controller-manager"})
KINDS = {"StatefulSet": STATEFULSET, "Service": SERVICE, layout.KDAPP_KIND: KDAPP_KIND, layout.KDCLUSTER_KIND: KDCLUSTER_KIND}


@dataclass(frozen=True)
class Identities:
    """Who may change owned fields: gitops-kd's users, KubeDirector's users, and the break-glass groups."""

    controller: frozenset[str] = frozenset()
    kubedirector: frozenset[str] = frozenset()
    break_glass_groups: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Verdict:
    """The answer: ``message`` (denials) names the object, the field, the Git file and the break-glass;
    ``break_glass`` (allowed requests) says which break-glass let an owned-field change through."""

    allowed: bool
    kind: str = ""
    namespace: str = ""
    name: str = ""
    fields: tuple[str, ...] = ()
    message: str = ""
    break_glass: str = ""
    files: tuple[str, ...] = field(default=())


ALLOW = Verdict(True)


def trusted(request: Mapping[str, Any], who: Identities) -> bool:
    """True when ``request`` is made by one of gitops-kd's or KubeDirector's users (allowed whatever it changes)."""
    username = str((request.get("userInfo") or {}).get("username", ""))
    return username in who.controller or username in who.kubedirector


def exempt(request: Mapping[str, Any], who: Identities) -> bool:
    """True when ``request`` is allowed whatever Git says (no desired state needed): not an UPDATE/DELETE of a
    kind judged here, a subresource, or trusted."""
    return (
        KINDS.get(str((request.get("kind") or {}).get("kind", ""))) is None
        or str(request.get("operation", "")) not in ("UPDATE", "DELETE")
        or bool(request.get("subResource"))
        or trusted(request, who)
        or (
            str(request.get("operation", "")) == "DELETE"
            and str((request.get("userInfo") or {}).get("username", "")) in GARBAGE_COLLECTORS
        )
    )


def break_glass(request: Mapping[str, Any], who: Identities) -> str:
    """The break-glass ``request`` carries ("group G", "annotation 'reason'"), or "" (none)."""
    groups = [str(g) for g in (request.get("userInfo") or {}).get("groups") or []]
    return _break_glass(
        groups, who, str(request.get("operation", "")), request.get("object") or {}, request.get("oldObject") or {}
    )


def decide(
    request: Mapping[str, Any],
    desired: DesiredState | None,
    observed: ObservedState | None,
    who: Identities,
    rules: IgnoreRules | None = None,
) -> Verdict:
    """The verdict on one AdmissionReview v1 ``request``."""
    if desired is None or exempt(request, who):
        return ALLOW
    kind = KINDS[str((request.get("kind") or {}).get("kind", ""))]
    operation = str(request.get("operation", ""))
    new, old = request.get("object") or {}, request.get("oldObject") or {}
    namespace = str(request.get("namespace") or _meta(old).get("namespace") or "")
    name = str(request.get("name") or _meta(old).get("name") or "")
    owned = _owned_changes(
        kind, namespace, name, operation, new, old, desired, observed, rules if rules is not None else IgnoreRules.defaults()
    )
    glass = break_glass(request, who)
    if owned is not None and not owned[0] and glass.startswith("annotation"):
        # the annotation set on an edit that changes nothing owned: still audited, and no standing bypass
        return Verdict(True, kind, namespace, name, (f"metadata.annotations[{BREAK_GLASS_ANNOTATION}]",), "", glass, owned[1])
    if owned is None or not owned[0]:
        return ALLOW
    changed, files = owned
    if glass:
        return Verdict(True, kind, namespace, name, changed, "", glass, files)
    return Verdict(
        False, kind, namespace, name, changed, denial(kind, namespace, name, operation, changed, files, who), "", files
    )


def denial(
    kind: str, namespace: str, name: str, operation: str, changed: tuple[str, ...], files: tuple[str, ...], who: Identities
) -> str:
    """The denial message: object, field(s), the Git file(s) to change instead, and the break-glass."""
    what = "deleting it" if operation == "DELETE" else ", ".join(changed)
    where = " or ".join(files) if files else "the Git repository"
    groups = f"a user in group {', '.join(sorted(who.break_glass_groups))}" if who.break_glass_groups else ""
    head = (
        f"{kind} {namespace}/{name} is managed by gitops-kd from Git: {what} "
        f"{'is' if operation == 'DELETE' or len(changed) == 1 else 'are'} owned by gitops-kd; "
        f"change {where} in Git instead."
    )
    if operation == "DELETE":  # a DELETE carries no annotation: only the group breaks the glass
        return f"{head} Break-glass (audited): {groups}" if groups else head
    return (
        f"{head} Break-glass (audited): set the annotation {BREAK_GLASS_ANNOTATION}"
        f'="<reason>" in this edit{" or " + groups if groups else ""}'
    )


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _break_glass(groups: list[str], who: Identities, operation: str, new: Mapping[str, Any], old: Mapping[str, Any]) -> str:
    for group in groups:
        if group in who.break_glass_groups:
            return f"group {group}"
    if operation == "DELETE":  # a DELETE sets no annotation: one left on the object is no break-glass
        return ""
    old_reason = (_meta(old).get("annotations") or {}).get(BREAK_GLASS_ANNOTATION)
    reason = (_meta(new).get("annotations") or {}).get(BREAK_GLASS_ANNOTATION)
    return f"annotation {reason!r}" if reason and reason != old_reason else ""


def _owned_changes(
    kind: str,
    namespace: str,
    name: str,
    operation: str,
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    desired: DesiredState,
    observed: ObservedState | None,
    rules: IgnoreRules,
) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(owned fields this request changes away from Git, the Git files of the object) or None (not managed)."""
    if kind in (KDAPP_KIND, KDCLUSTER_KIND):
        key = (namespace, name)
        spec = desired.apps.get(key) if kind == KDAPP_KIND else desired.clusters.get(key)
        if spec is None:
            return None
        files = (spec.source,)
        if operation == "DELETE":
            return ("the object",), files
        manifest = app_manifest(spec, key) if kind == KDAPP_KIND else cluster_manifest(spec, key)  # type: ignore[arg-type]
        meta = manifest.get("metadata") or {}
        wanted = {"spec": manifest.get("spec") or {}, "metadata": {k: meta[k] for k in ("labels", "annotations") if meta.get(k)}}
        return _changed_away(kind, [c.path for c in missing_or_changed_stored(new, wanted, kind)], new, old, rules), files
    cluster_name, role = _member_of(kind, old, new, observed, namespace)
    cluster = desired.clusters.get((namespace, cluster_name)) if cluster_name and role else None
    found = app_for(desired, (namespace, cluster_name), cluster) if cluster is not None else None
    if cluster is None or found is None or str(role) not in found[1].role_ids:
        return None
    app_key, app = found
    sources = (app.source, cluster.source)
    if operation == "DELETE":
        return ("the object",), sources
    moved_labels = tuple(
        f"metadata.labels[{k}]"
        for k in layout.KD_LABELS
        if (_meta(old).get("labels") or {}).get(k) != (_meta(new).get("labels") or {}).get(k)
    )
    if kind == SERVICE:
        want = [(p["name"], p["port"]) for p in service_ports(app, str(role))]
        have, was = _ports(new), _ports(old)
        moved = bool(want) and have != was and have != want and not rules.ignored(SERVICE, "spec.ports")
        return moved_labels + (("spec.ports",) if moved else ()), sources
    live = observed.clusters.get((namespace, str(cluster_name))) if observed is not None else None
    t = transition(app, observed.apps.get(app_key) if observed is not None else None, live.rollout if live is not None else None)
    try:
        owned = owned_template(app, cluster, str(role), from_version=t.from_version, rules=t.rules)
    except (KeyError, ValueError):
        return moved_labels, sources
    template = (new.get("spec") or {}).get("template") or {}
    found_paths = [f"spec.template.{p}" for p in owned_differences(template, owned)]
    changed_paths = _changed_away(STATEFULSET, found_paths, new, old, rules)
    strategy, was_strategy = _value(new, UPDATE_STRATEGY), _value(old, UPDATE_STRATEGY)
    if strategy != was_strategy and strategy not in (None, ON_DELETE) and not rules.ignored(STATEFULSET, UPDATE_STRATEGY):
        changed_paths += (UPDATE_STRATEGY,)
    return moved_labels + changed_paths, sources


def _member_of(
    kind: str, old: Mapping[str, Any], new: Mapping[str, Any], observed: ObservedState | None, namespace: str
) -> tuple[str, str]:
    """(KDCluster name, role id) of a StatefulSet or member Service: from KubeDirector's labels, else (labels
    removed) from its controller ownerReference to a KDCluster and the role the watch caches know it by."""
    labels = _meta(old).get("labels") or _meta(new).get("labels") or {}
    cluster_name, role = str(labels.get(layout.CLUSTER_LABEL) or ""), str(labels.get(layout.ROLE_LABEL) or "")
    if not cluster_name:
        cluster_name = layout.controller_cluster(_meta(old))
    if cluster_name and not role and observed is not None:
        live = observed.clusters.get((namespace, cluster_name))
        name = str(_meta(old).get("name", ""))
        if live is not None and kind == STATEFULSET:
            role = next((r for r, s in live.statefulsets.items() if s.name == name), "")
        elif live is not None:
            role = next((str(s.role) for s in live.services if s.name == name and s.role), "")
    return cluster_name, role


def _ports(obj: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    return [(p.get("name"), p.get("port")) for p in (obj.get("spec") or {}).get("ports") or []]


def _changed_away(
    kind: str, differing: list[str], new: Mapping[str, Any], old: Mapping[str, Any], rules: IgnoreRules
) -> tuple[str, ...]:
    """The paths where ``new`` differs from Git that this request changed (old had another value) and that
    the ignore rules do not drop."""
    out = []
    for path in differing:
        if rules.ignored(kind, path):
            continue
        if _value(new, path) != _value(old, path):
            out.append(path)
    return tuple(out)


def _value(obj: Mapping[str, Any], path: str) -> Any:
    try:
        return paths.value_at(obj, path)
    except (KeyError, IndexError, TypeError, ValueError):
        return None
