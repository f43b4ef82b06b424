"""diff(desired, observed): every desired KDApp and KDCluster against the live objects, classified (pure).

Per-object results are memoised on the identity of their (frozen) inputs (diff/memo.py), so an app or
cluster whose desired and live objects are the very same objects as in the previous diff costs a lookup.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from gitops_kd.constants import APPLIED_ANNOTATION, SERVER_KEPT_ANNOTATION, UPGRADE_ANNOTATION
from gitops_kd.diff import switch
from gitops_kd.diff.fields import app_fact_changes, app_role_facts, cluster_changes, contains
from gitops_kd.diff.memo import IdentityMemo
from gitops_kd.diff.model import (
    CREATE,
    DOWNGRADE,
    EQUAL,
    UPGRADE,
    AppDiff,
    ClusterDiff,
    DiffReport,
    PortsDiff,
    Refusal,
    RoleDiff,
    Transition,
)
from gitops_kd.diff.refusals import app_refusals, cluster_refusals
from gitops_kd.diff.transition import compare_versions, template_versions, transition
from gitops_kd.kd.normalize import stored_spec
from gitops_kd.observed import ObservedApp, ObservedCluster, ObservedState
from gitops_kd.render.compare import owned_differences
from gitops_kd.render.template import owned_template, service_ports
from gitops_kd.spec.freeze import FrozenMap, freeze, thaw
from gitops_kd.spec.model import KDApp, KDCluster, compact_json
from gitops_kd.spec.shared import SharedValues
from gitops_kd.spec.state import DesiredState, Key


def spec_digest(spec: Any) -> str:
    """A short digest of a spec as written (canonical JSON), recorded in APPLIED_ANNOTATION."""
    return hashlib.sha256(compact_json(spec).encode()).hexdigest()[:16]


def _stamp(body: dict[str, Any], namespace: str) -> dict[str, Any]:
    meta = body.setdefault("metadata", {})
    meta["namespace"] = namespace
    meta["annotations"] = {**(meta.get("annotations") or {}), APPLIED_ANNOTATION: spec_digest(body.get("spec"))}
    return body


_MANIFESTS: IdentityMemo[FrozenMap[str, Any]] = IdentityMemo("manifests")
_APP_DIFFS: IdentityMemo[tuple[AppDiff, tuple[Refusal, ...]]] = IdentityMemo("app diffs")
_CLUSTER_DIFFS: IdentityMemo[tuple[ClusterDiff, tuple[Refusal, ...]]] = IdentityMemo("cluster diffs")
_OWNED: IdentityMemo[Any] = IdentityMemo("owned templates")
_FACTS: IdentityMemo[dict[str, dict[str, Any]]] = IdentityMemo("app role facts")
_DIGESTS: IdentityMemo[str] = IdentityMemo("manifest digests")
_STORED: IdentityMemo[Any] = IdentityMemo("stored specs")
MEMOS = (_MANIFESTS, _APP_DIFFS, _CLUSTER_DIFFS, _OWNED, _FACTS, _DIGESTS, _STORED)
_SHARED = SharedValues()  # the memos' frozen renderings hold values equal across clusters (one app's templates) once


def frozen_app_manifest(app: KDApp, key: Key) -> FrozenMap[str, Any]:
    """app_manifest(), deep-frozen and memoised per (app, namespace): what ApplyApp carries."""
    return _MANIFESTS.get((app,), ("app", key[0]), lambda: freeze(_stamp(app.cluster_manifest(), key[0]), _SHARED.share))


def frozen_cluster_manifest(cluster: KDCluster, key: Key) -> FrozenMap[str, Any]:
    """cluster_manifest(), deep-frozen and memoised per (cluster, namespace): what ApplyCluster carries."""
    return _MANIFESTS.get((cluster,), ("cluster", key[0]), lambda: freeze(_stamp(cluster.body, key[0]), _SHARED.share))


def manifests_digest(cluster: KDCluster, key: Key, app: KDApp, app_key: Key) -> str:
    """sha256 of a cluster's manifest and its app's (canonical JSON), memoised per (cluster, app, keys)."""
    return _DIGESTS.get(
        (cluster, app),
        (key, app_key),
        lambda: hashlib.sha256(
            compact_json({"cluster": cluster_manifest(cluster, key), "app": app_manifest(app, app_key)}).encode()
        ).hexdigest(),
    )


def app_manifest(app: KDApp, key: Key) -> dict[str, Any]:
    """The KDApp object to apply: cluster_manifest() in the key's namespace, stamped with its spec digest."""
    return thaw(frozen_app_manifest(app, key))  # type: ignore[no-any-return]


def cluster_manifest(cluster: KDCluster, key: Key) -> dict[str, Any]:
    """The KDCluster object to apply: the document as written, in the key's namespace, stamped."""
    return thaw(frozen_cluster_manifest(cluster, key))  # type: ignore[no-any-return]


def desired_app_facts(app: KDApp) -> dict[str, dict[str, Any]]:
    """app_role_facts of the app's spec as written, memoised per app (treat as read-only)."""
    return _FACTS.get((app,), None, lambda: app_role_facts(app.frozen_body.get("spec") or FrozenMap()))


def memo_owned_template(app: KDApp, cluster: KDCluster, role: str, *, from_version: str | None, rules: Any) -> Any:
    """render.template.owned_template (deep-frozen), memoised per (app, cluster, role, from_version, rules)."""
    return _OWNED.get(
        (app, cluster, rules),
        (role, from_version),
        lambda: freeze(owned_template(app, cluster, role, from_version=from_version, rules=rules), _SHARED.share),
    )


def annotation(raw: Any, name: str) -> Any:
    """metadata.annotations[name] of a live object (None when absent)."""
    return ((raw.get("metadata") or {}).get("annotations") or {}).get(name)


def stored_manifest_spec(manifest: Mapping[str, Any]) -> Any:
    """The manifest's spec in KubeDirector's stored form (kd/normalize.py), frozen, memoised per manifest."""
    return _STORED.get(
        (manifest,),
        None,
        lambda: freeze(stored_spec(str(manifest.get("kind", "")), manifest.get("spec") or {}), _SHARED.share),
    )


def applied(live_raw: Any, manifest: Mapping[str, Any]) -> bool:
    """True when the live object was applied from this manifest (digest annotation) and still carries its
    labels, annotations and spec, as written or as KubeDirector stores it (kd/normalize.py: its webhook moves
    a KDApp's defaults into the roles); server-side defaults, other labels and annotations, status are ignored."""
    meta = manifest.get("metadata", {})
    labels = (live_raw.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (meta.get("labels") or {}).items()):
        return False
    want = meta.get("annotations") or {}
    if not all(annotation(live_raw, k) == v for k, v in want.items()):
        return False
    if kept_by_server(live_raw, want.get(APPLIED_ANNOTATION)):
        return True
    live_spec = live_raw.get("spec") or {}
    return contains(live_spec, stored_manifest_spec(manifest)) or contains(live_spec, manifest.get("spec") or {})


def kept_marker(digest: Any, live_raw: Any) -> str:
    """SERVER_KEPT_ANNOTATION's value for a write of the manifest with ``digest`` that left ``live_raw`` stored."""
    return f"{digest}@{(live_raw.get('metadata') or {}).get('generation', 0)}"


def kept_by_server(live_raw: Any, digest: Any) -> bool:
    """True when gitops-kd already wrote the manifest with ``digest`` and the server kept a spec that differs
    (SERVER_KEPT_ANNOTATION), and the spec has not changed since (same generation): writing again changes nothing."""
    return digest is not None and annotation(live_raw, SERVER_KEPT_ANNOTATION) == kept_marker(digest, live_raw)


def app_for(desired: DesiredState, key: Key, cluster: KDCluster) -> tuple[Key, KDApp] | None:
    """The desired app a cluster uses: the one in its namespace, else the first of that name (system catalog)."""
    return _Index(desired, None).app_for(key, cluster)


def users_of(desired: DesiredState, observed: ObservedState, app_key: Key) -> tuple[ObservedCluster, ...]:
    """Live clusters using the app: same name in its namespace, or in a namespace without such an app."""
    return _Index(desired, observed).users_of(app_key)


class _Index:
    """Lookups a diff makes per app or cluster, built once per diff: apps by name, live clusters by app."""

    def __init__(self, desired: DesiredState, observed: ObservedState | None) -> None:
        self.apps = desired.apps
        self._first = desired.first_app_named
        self._by_app: Mapping[str, tuple[ObservedCluster, ...]] = observed.clusters_by_app if observed is not None else {}

    def app_for(self, key: Key, cluster: KDCluster) -> tuple[Key, KDApp] | None:
        local = (key[0], cluster.app)
        found = local if local in self.apps else self._first.get(cluster.app)
        return (found, self.apps[found]) if found is not None else None

    def users_of(self, app_key: Key) -> tuple[ObservedCluster, ...]:
        return tuple(
            c for c in self._by_app.get(app_key[1], ()) if c.namespace == app_key[0] or (c.namespace, c.app) not in self.apps
        )


def app_applied(app: KDApp, key: Key, live: ObservedApp) -> bool:
    """True when the live KDApp carries the desired spec and annotations (upgrade stanza, digest)."""
    if app.upgrade is None and annotation(live.raw, UPGRADE_ANNOTATION) is not None:
        return False
    return applied(live.raw, frozen_app_manifest(app, key))


def _direction(app: KDApp, live: ObservedApp | None) -> str:
    if live is None:
        return CREATE
    try:
        order = compare_versions(app.version, live.version)
    except ValueError:
        order = 0 if app.version == live.version else 1
    return UPGRADE if order > 0 else DOWNGRADE if order < 0 else EQUAL


def diff_app(
    desired: DesiredState, observed: ObservedState, key: Key, index: _Index | None = None
) -> tuple[AppDiff, list[Refusal]]:
    """One desired app against its live object; memoised on (app, live app, live clusters using it)."""
    app = desired.apps[key]
    live = observed.apps.get(key)
    users = (index or _Index(desired, observed)).users_of(key)
    found, refusals = _APP_DIFFS.get((app, live, *users), key, lambda: _diff_app(app, live, key, users))
    return found, list(refusals)


def _diff_app(
    app: KDApp, live: ObservedApp | None, key: Key, users: tuple[ObservedCluster, ...]
) -> tuple[AppDiff, tuple[Refusal, ...]]:
    live_facts = app_role_facts(live.spec) if live is not None else None
    refusals = app_refusals(app, live, users, live_facts)
    changes = app_fact_changes(live_facts, desired_app_facts(app)) if live_facts is not None else ()
    needs = live is None or not app_applied(app, key, live)
    return AppDiff(key, app.source, live.version if live else None, app.version, _direction(app, live), needs, changes), tuple(
        refusals
    )


def role_diffs(app: KDApp, cluster: KDCluster, live: ObservedCluster, t: Transition) -> tuple[RoleDiff, ...]:
    """Role StatefulSets whose template lacks the owned fields for transition ``t``."""
    out: list[RoleDiff] = []
    for rid in app.role_ids:
        sts = live.statefulset(rid)
        if sts is None or rid not in {r.id for r in cluster.roles}:
            continue
        owned = memo_owned_template(app, cluster, rid, from_version=t.from_version, rules=t.rules)
        fields = owned_differences(sts.template, owned)
        if fields:
            out.append(RoleDiff(rid, sts.name, fields))
    return tuple(out)


def ports_diffs(app: KDApp, live: ObservedCluster) -> tuple[PortsDiff, ...]:
    """Member Services whose (name, port) list differs from the app's endpoints for the role."""
    out: list[PortsDiff] = []
    for svc in live.member_services():
        if svc.role not in app.role_ids:
            continue
        want = tuple((p["name"], int(p["port"])) for p in service_ports(app, svc.role))
        have = tuple((str(p.get("name")), int(p.get("port", 0))) for p in svc.ports)
        if want and want != have:
            out.append(PortsDiff(svc.name, svc.role, want))
    return tuple(out)


def diff_cluster(
    desired: DesiredState, observed: ObservedState, key: Key, index: _Index | None = None
) -> tuple[ClusterDiff, list[Refusal]]:
    """One desired cluster against its live object; memoised on (cluster, live cluster, app, live app)."""
    cluster = desired.clusters[key]
    live = observed.clusters.get(key)
    found = (index or _Index(desired, None)).app_for(key, cluster)
    app_key, app = found if found is not None else (None, None)
    live_app = observed.apps.get(app_key) if app_key is not None else None
    native = switch.native(observed)
    result, refusals = _CLUSTER_DIFFS.get(
        (cluster, live, app, live_app), (key, app_key, native), lambda: _diff_cluster(cluster, live, key, found, live_app, native)
    )
    return result, list(refusals)


def _diff_cluster(
    cluster: KDCluster,
    live: ObservedCluster | None,
    key: Key,
    found: tuple[Key, KDApp] | None,
    live_app: ObservedApp | None,
    native: bool = False,
) -> tuple[ClusterDiff, tuple[Refusal, ...]]:
    refusals = tuple(cluster_refusals(cluster, live, app_switch=native))
    if live is None:
        return ClusterDiff(key, cluster.source, found[0] if found else None, False, True), refusals
    needs = not applied(live.raw, frozen_cluster_manifest(cluster, key))
    changes = cluster_changes(live.spec, cluster.frozen_body.get("spec") or {})
    if found is None:
        return ClusterDiff(key, cluster.source, None, True, needs, changes=changes), refusals
    app_key, app = found
    t = transition(app, live_app, live.rollout, template_versions(live), live.all_pods())
    return ClusterDiff(
        key, cluster.source, app_key, True, needs, t, role_diffs(app, cluster, live, t), ports_diffs(app, live), changes
    ), refusals


def diff(desired: DesiredState, observed: ObservedState, *, new_round: bool = True) -> DiffReport:
    """Compare the desired state with the observed one. Any refusal refuses the commit as a whole.
    ``new_round``: drop the memo entries the previous round did not use (False for a diff of a part)."""
    if new_round:
        for memo in MEMOS:
            memo.new_round()
    index = _Index(desired, observed)
    apps: list[AppDiff] = []
    clusters: list[ClusterDiff] = []
    refusals: list[Refusal] = []
    for key in sorted(desired.apps):
        app_diff, found = diff_app(desired, observed, key, index)
        apps.append(app_diff)
        refusals += found
    for key in sorted(desired.clusters):
        cluster_diff, found = diff_cluster(desired, observed, key, index)
        clusters.append(cluster_diff)
        refusals += found
        moved = switch.switch_of(desired, observed, key)  # the branch's native path: its own rules
        if moved is not None:
            refusals += switch.switch_refusals(desired, observed, moved)
    return DiffReport(tuple(apps), tuple(clusters), tuple(refusals))
