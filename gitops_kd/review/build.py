"""review(head, observed): what merging would do, from the same diff and plan the controller runs (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from gitops_kd.diff import ClusterDiff, DiffReport, diff
from gitops_kd.diff.model import DOWNGRADE, UPGRADE, Transition
from gitops_kd.diff.rollback import rollback
from gitops_kd.observed import ObservedCluster, ObservedState
from gitops_kd.plan.planner import plan, role_order
from gitops_kd.plan.pods import PodContext, outdated
from gitops_kd.render import dir_actions, has_storage
from gitops_kd.review.estimate import cluster_seconds, total_seconds
from gitops_kd.review.model import (
    AppReview,
    ClusterReview,
    DirRule,
    PortChange,
    Refused,
    Review,
    RoleReview,
)
from gitops_kd.review.steps import gate_step, hook_step
from gitops_kd.review.verdict import app_verdict
from gitops_kd.spec.model import KDApp, KDCluster
from gitops_kd.spec.state import DesiredState, Key
from gitops_kd.spec.upgrade import HALT, KEEP


def review(
    head: DesiredState,
    observed: ObservedState,
    *,
    now: datetime,
    base: str,
    against: str,
    head_label: str | None = None,
    wave_soak_seconds: float = 0.0,
) -> Review:
    """The review of ``head`` against ``observed`` (described by ``against``); ``base`` and ``head_label``
    (default: the head commit) name the two revisions."""
    report = diff(head, observed)
    result = plan(head, observed, now=now, wave_soak_seconds=wave_soak_seconds)
    refusals = tuple(Refused(r.file, r.field, r.reason) for r in result.refusals)
    apps = tuple(_app(head, observed, report, k) for k in sorted(head.apps))
    order = sorted(head.clusters, key=lambda k: (head.clusters[k].wave, k))
    clusters = tuple(_cluster(head, observed, report, k, now) for k in order)
    notes = tuple(
        f"{kind} {k[0]}/{k[1]} is no longer in Git: left in place (deleted only with --prune)"
        for kind, keys in (("app", observed.apps), ("cluster", observed.clusters))
        for k in sorted(keys)
        if k not in (head.apps if kind == "app" else head.clusters)
    )
    return Review(
        base, head_label or head.commit, against, refusals, apps, clusters, notes, total_seconds(clusters, wave_soak_seconds)
    )


def _app(head: DesiredState, observed: ObservedState, report: DiffReport, key: Key) -> AppReview:
    app = head.apps[key]
    live = observed.apps.get(key)
    users = observed.clusters_of_app(key[0], key[1])
    direction, allowed, verdict = app_verdict(app, live, bool(users))
    found = report.app(key)
    changes = tuple(c.describe() for c in found.changes) if found is not None else ()
    return AppReview(key, app.source, live.version if live else None, app.version, direction, allowed, verdict, changes)


def _cluster(head: DesiredState, observed: ObservedState, report: DiffReport, key: Key, now: datetime) -> ClusterReview:
    cluster = head.clusters[key]
    cdiff = report.cluster(key)
    live = observed.clusters.get(key)
    changes = tuple(c.describe() for c in cdiff.changes) if cdiff is not None else ()
    base = ClusterReview(key, cluster.source, cluster.app, cluster.wave, "in-sync", changes=changes)
    if cdiff is None or cdiff.app is None:
        return base
    app = head.apps[cdiff.app]
    if live is None or not cdiff.exists:
        roles = tuple(
            RoleReview(r.id, r.members_for(app.role(r.id)), 0, (), has_storage(cluster, r.id), False, False)
            for r in cluster.roles
            if r.id in app.role_ids
        )
        return _replace(base, state="create", to_version=app.version, roles=roles)
    t = cdiff.transition
    if t is None:
        return _replace(base, state="update" if cdiff.needs_apply else "in-sync")
    return _rollout(base, app, cluster, live, cdiff, t, now)


def _rollout(
    base: ClusterReview, app: KDApp, cluster: KDCluster, live: ObservedCluster, cdiff: ClusterDiff, t: Transition, now: datetime
) -> ClusterReview:
    order = role_order(app, t, live)
    pending = frozenset(r.role for r in cdiff.roles)
    ctx = PodContext(app, live, t, live.rollout, order, pending, now)
    upgrade = t.direction == UPGRADE and t.stanza is not None
    stanza = t.stanza
    roles = []
    for rid in order:
        storage = has_storage(cluster, rid)
        dirs = _dirs(app.role(rid).effective_persist_dirs if storage else (), t)
        replaced = sum(1 for p in live.role_pods(rid) if outdated(ctx, p))
        hook = upgrade and stanza is not None and stanza.post_upgrade is not None and stanza.post_upgrade.applies_to(rid)
        gate = upgrade and stanza is not None and stanza.gate is not None and stanza.gate.applies_to(rid)
        roles.append(RoleReview(rid, len(live.role_pods(rid)), replaced, dirs, storage, hook, gate))
    moving = any(r.replaced for r in roles) or t.direction in (UPGRADE, DOWNGRADE)
    state = "rollout" if moving else "update" if not cdiff.in_sync else "in-sync"
    found = _replace(
        base,
        state=state,
        direction=t.direction,
        from_version=t.from_version,
        to_version=t.target_version,
        roles=tuple(roles),
        ports=_ports(live, cdiff),
        hook=hook_step(stanza.post_upgrade) if upgrade and stanza and stanza.post_upgrade else None,
        gate=gate_step(stanza.gate) if upgrade and stanza and stanza.gate else None,
        failure_policy=stanza.failure_policy if stanza is not None else HALT,
        pod_ready_timeout_seconds=ctx.ready_timeout,
        rollback=rollback(t.target_version, t.from_version, stanza) if t.direction == UPGRADE else None,
    )
    return _replace(found, estimate_seconds=cluster_seconds(found))


def _dirs(dirs: tuple[str, ...], t: Transition) -> tuple[DirRule, ...]:
    """The data rule of every persisted dir (and finer rules below them); a version change without a
    matching rule is refused, and a rebuild or adoption keeps the data as it is."""
    if t.direction in (UPGRADE, DOWNGRADE) and t.rules is None:
        return tuple(DirRule(d, "refused") for d in dirs)
    out = []
    for directory, action in dir_actions(dirs, t.rules if t.direction in (UPGRADE, DOWNGRADE) else None):
        rule = t.rules.action_for(directory) if t.rules is not None and action != KEEP else None
        migrate = rule.migrate if rule is not None else None
        out.append(DirRule(directory, action, migrate.command if migrate else None, migrate.timeout_seconds if migrate else None))
    return tuple(out)


def _ports(live: ObservedCluster, cdiff: ClusterDiff) -> tuple[PortChange, ...]:
    """Member Service port changes, one entry per role and change (with how many Services it touches, and the
    ordinals of their members, highest first: the order their pods are replaced in, each Service with its pod)."""
    services = {s.name: s for s in live.services}
    groups: dict[tuple[str, tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]], list[int]] = {}
    for change in cdiff.ports:
        svc = services.get(change.service)
        before = _pairs(svc.ports) if svc is not None else ()
        pod = live.pod(svc.pod) if svc is not None and svc.pod else None
        groups.setdefault((change.role, before, tuple(change.ports)), []).append(pod.ordinal if pod is not None else -1)
    return tuple(
        PortChange(role, len(found), before, after, tuple(sorted((o for o in found if o >= 0), reverse=True)))
        for (role, before, after), found in groups.items()
    )


def _pairs(ports: Iterable[Mapping[str, Any]]) -> tuple[tuple[str, int], ...]:
    return tuple((str(p.get("name", "")), int(p.get("port", 0))) for p in ports)


def _replace(c: ClusterReview, **changes: object) -> ClusterReview:
    return replace(c, **changes)  # type: ignore[arg-type]
