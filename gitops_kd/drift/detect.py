"""detect(desired, observed): the out-of-band changes to fields gitops-kd owns, per live object (pure).

Compared (each against what the planner would render from Git for the same commit and transition):
- role StatefulSets: the owned pod-template fields (render.owned_differences), updateStrategy OnDelete, and
  KubeDirector's kdcluster and role labels (found by ownerReference when they are gone: plan/labels.py);
- member Services: spec.ports (name, port) from the app's service endpoints of the role;
- the live KDApp: spec, labels and annotations of ``app_manifest`` (KDApp.cluster_manifest());
- the live KDCluster: spec, labels and annotations of the Git document.
A cluster whose upgrade gitops-kd is running (or that has yet to start it) is NOT drift for the fields the
upgrade writes — its templates, updateStrategy, Service ports and its app's KDApp: see ``upgrade_in_progress``.
Ignore rules (drift.rules) drop fields on top. Same input, same output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gitops_kd.constants import ACTIVE_PHASES, APPLIED_ANNOTATION, UPGRADE_ANNOTATION
from gitops_kd.diff.engine import app_for, app_manifest, cluster_manifest, kept_by_server, users_of
from gitops_kd.diff.memo import IdentityMemo
from gitops_kd.diff.transition import transition
from gitops_kd.drift import paths
from gitops_kd.drift.compare import missing_or_changed, missing_or_changed_stored
from gitops_kd.drift.model import Drift, FieldChange
from gitops_kd.drift.rules import IgnoreRules
from gitops_kd.kd.layout import KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.kd.layout import SERVICE_KIND as SERVICE
from gitops_kd.kd.layout import STATEFULSET_KIND as STATEFULSET
from gitops_kd.observed import ON_DELETE, ObservedApp, ObservedCluster, ObservedState
from gitops_kd.plan.held import spec_changed
from gitops_kd.plan.labels import labels_to_restore
from gitops_kd.render.compare import owned_differences
from gitops_kd.render.template import owned_template, service_ports
from gitops_kd.spec.model import KDApp, KDCluster
from gitops_kd.spec.state import DesiredState, Key

InProgress = Callable[[Key], bool]
DEFAULT_RULES = IgnoreRules.defaults()
_CLUSTERS: IdentityMemo[tuple[tuple[Drift, ...], bool]] = IdentityMemo("cluster drift")
_APPS: IdentityMemo[tuple[Drift, ...]] = IdentityMemo("app drift")
TEMPLATE = "spec.template"
UPDATE_STRATEGY = "spec.updateStrategy.type"


def upgrade_in_progress(desired: DesiredState, observed: ObservedState, key: Key) -> bool:
    """True when gitops-kd is (or is about to be) changing the cluster's owned fields for this commit:
    the KDRollout is Upgrading/Downgrading (or Stalled mid-way) towards the desired app version, or there is
    no KDRollout yet / it targets another version (the planner's EnsureRollout comes first). A cluster not
    in Git or without a desired app is never in progress."""
    cluster, live = desired.clusters.get(key), observed.clusters.get(key)
    if cluster is None or live is None:
        return False
    found = app_for(desired, key, cluster)
    if found is None:
        return False
    target = found[1].version
    rollout = live.rollout
    if rollout is None or rollout.target_version != target:
        return True
    return rollout.phase in ACTIVE_PHASES or rollout.app_version != target


def detect(
    desired: DesiredState,
    observed: ObservedState,
    *,
    rules: IgnoreRules | None = None,
    in_progress: InProgress | None = None,
    app_in_progress: InProgress | None = None,
    new_round: bool = True,
) -> list[Drift]:
    """Every drifted object, sorted by (kind, namespace, name).

    ``in_progress(cluster_key)`` marks more clusters as converging (e.g. not yet seen in sync at this
    commit): none of their objects is drift. ``app_in_progress(app_key)`` does the same for KDApps; a KDApp
    is also converging while any cluster using it is. A cluster's result is memoised on the identity of its
    inputs (diff/memo.py): an unchanged cluster costs a lookup; ``new_round`` as diff's (False for a part).
    """
    rules = rules if rules is not None else DEFAULT_RULES
    busy = in_progress or (lambda _key: False)
    if new_round:
        _CLUSTERS.new_round()
        _APPS.new_round()
    drifts: list[Drift] = []
    converging: set[Key] = set()
    for key in sorted(desired.clusters):
        live = observed.clusters.get(key)
        if live is None:
            continue
        if busy(key):
            converging.add(key)
            continue
        found, upgrading = _cluster_drifts(desired, observed, key, live, rules)
        drifts += found
        if upgrading:
            converging.add(key)
    for app_key in sorted(desired.apps):
        live_app = observed.apps.get(app_key)
        if live_app is None or (app_in_progress is not None and app_in_progress(app_key)):
            continue
        users = users_of(desired, observed, app_key)
        if any(c.key in converging for c in users):
            continue
        drifts += _app_drifts(app_key, desired.apps[app_key], live_app, bool(users), desired.commit, rules)
    return sorted(drifts, key=lambda d: d.key)


def _cluster_drifts(
    desired: DesiredState, observed: ObservedState, key: Key, live: ObservedCluster, rules: IgnoreRules
) -> tuple[tuple[Drift, ...], bool]:
    """(the drifts of one live cluster's KDCluster, StatefulSets and member Services, whether its upgrade is in
    progress), memoised: they depend only on its desired cluster and app, its live cluster and app, and the rules."""
    cluster = desired.clusters[key]
    found = app_for(desired, key, cluster)
    app_key, app = found if found is not None else (None, None)
    live_app = observed.apps.get(app_key) if app_key is not None else None

    def compute() -> tuple[tuple[Drift, ...], bool]:
        changes = _metadata_and_spec(live.raw, cluster_manifest(cluster, key))
        out = _object(KDCLUSTER_KIND, key[0], key[1], key[1], desired.commit, rules, changes, live.raw)
        if app is None or app_key is None:
            return tuple(out), False
        if upgrade_in_progress(desired, observed, key):
            return tuple(out), True
        return tuple(out + _workloads(app, cluster, live, observed, app_key, desired.commit, rules)), False

    return _CLUSTERS.get((cluster, app, live, live_app, rules), (key, app_key, desired.commit), compute)


def _app_drifts(
    app_key: Key, app: KDApp, live_app: ObservedApp, used: bool, commit: str, rules: IgnoreRules
) -> tuple[Drift, ...]:
    """The drifts of one live KDApp (none while stock KubeDirector holds its spec for the clusters using it),
    memoised on the identity of the desired and live app and the rules."""

    def compute() -> tuple[Drift, ...]:
        if used and spec_changed(app, app_key, live_app):
            return ()  # held by stock KubeDirector while clusters use it (plan/held.py): not drift
        changes = _metadata_and_spec(live_app.raw, app_manifest(app, app_key))
        stray = ((live_app.raw.get("metadata") or {}).get("annotations") or {}).get(UPGRADE_ANNOTATION)
        if app.upgrade is None and stray is not None:  # Git has no stanza: the planner removes it
            changes.append(FieldChange(f"metadata.annotations[{UPGRADE_ANNOTATION}]", None, stray))
        return tuple(_object(KDAPP_KIND, app_key[0], app_key[1], None, commit, rules, changes, live_app.raw))

    return _APPS.get((app, live_app, rules), (app_key, used, commit), compute)


def _object(
    kind: str,
    namespace: str,
    name: str,
    cluster: str | None,
    commit: str,
    rules: IgnoreRules,
    changes: list[FieldChange],
    raw: Mapping[str, Any] | None = None,
) -> list[Drift]:
    kept = tuple(c for c in changes if not rules.ignored(kind, c.path))
    uid = str(((raw or {}).get("metadata") or {}).get("uid") or "")
    return [Drift(kind, namespace, name, cluster, kept, commit, uid)] if kept else []


def _metadata_and_spec(live: Mapping[str, Any], want: Mapping[str, Any]) -> list[FieldChange]:
    meta = want.get("metadata") or {}
    if kept_by_server(live, (meta.get("annotations") or {}).get(APPLIED_ANNOTATION)):  # execute/server_kept.py
        return missing_or_changed(live, {"metadata": {k: meta[k] for k in ("labels", "annotations") if meta.get(k)}})
    wanted = {"spec": want.get("spec") or {}, "metadata": {k: meta[k] for k in ("labels", "annotations") if meta.get(k)}}
    return missing_or_changed_stored(live, wanted, str(want.get("kind", "")))


def _workloads(
    app: KDApp, cluster: KDCluster, live: ObservedCluster, observed: ObservedState, app_key: Key, commit: str, rules: IgnoreRules
) -> list[Drift]:
    t = transition(app, observed.apps.get(app_key), live.rollout)
    cluster_roles = {r.id for r in cluster.roles}
    out: list[Drift] = []
    for rid in app.role_ids:
        sts = live.statefulset(rid)
        if sts is None or rid not in cluster_roles:
            continue
        owned = owned_template(app, cluster, rid, from_version=t.from_version, rules=t.rules)
        changes = [
            FieldChange(f"{TEMPLATE}.{p}", paths.value_at(owned, p), paths.value_at(sts.template, p))
            for p in owned_differences(sts.template, owned)
        ]
        if sts.update_strategy != ON_DELETE:
            changes.append(FieldChange(UPDATE_STRATEGY, ON_DELETE, sts.update_strategy))
        labels = (sts.raw.get("metadata") or {}).get("labels") or {}
        changes += [FieldChange(f"metadata.labels[{k}]", v, labels.get(k)) for k, v in labels_to_restore(live, rid)]
        out += _object(STATEFULSET, sts.namespace, sts.name, live.name, commit, rules, changes, sts.raw)
    for svc in live.member_services():
        if svc.role not in app.role_ids:
            continue
        want = service_ports(app, svc.role)
        if not want:
            continue
        out += _object(SERVICE, svc.namespace, svc.name, live.name, commit, rules, _port_changes(want, svc.ports), svc.raw)
    return out


def _port_changes(want: list[dict[str, Any]], have: tuple[Mapping[str, Any], ...]) -> list[FieldChange]:
    """(name, port) per Service port, keyed by name; an order change is one change of ``spec.ports``."""
    live = [{"name": str(p.get("name")), "port": int(p.get("port", 0))} for p in have]
    wanted = [{"name": str(p["name"]), "port": int(p["port"])} for p in want]
    if [(p["name"], p["port"]) for p in live] == [(p["name"], p["port"]) for p in wanted]:
        return []
    changes = missing_or_changed(live, wanted, ("spec", "ports"))
    return changes or [FieldChange("spec.ports", wanted, live)]
