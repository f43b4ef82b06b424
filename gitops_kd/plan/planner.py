"""plan(desired, observed, now): the ordered actions that move the cluster towards Git (pure, deterministic).

Order: the KDRollouts of clusters whose app version changes (recording the version being left while the
live KDApp still shows it), the KDApps, KDCluster creations and spec updates, then per cluster (by wave,
namespace, name): SetOnDelete and PatchTemplate of every role, member Service ports, then the pod phase
(plan/pods.py) and FinishRollout. A cluster waits while a cluster of the same app in a lower
gitops-kd.io/wave is still rolling out (or stalled). Wait actions come last, so ``Plan.next()`` is
real work when any exists.
Any refusal from the diff refuses the whole plan.
"""

from __future__ import annotations

from datetime import datetime

from gitops_kd.diff.engine import app_manifest, cluster_manifest, diff
from gitops_kd.diff.model import ClusterDiff, Transition
from gitops_kd.observe.model import ON_DELETE, ObservedCluster, ObservedRollout, ObservedState
from gitops_kd.plan.actions import (
    Action,
    ApplyApp,
    ApplyCluster,
    EnsureRollout,
    FinishRollout,
    PatchServicePorts,
    PatchTemplate,
    Plan,
    SetOnDelete,
    Wait,
)
from gitops_kd.plan.pods import POLL_SECONDS, PodContext, outdated, pod_steps
from gitops_kd.render.compare import template_patch
from gitops_kd.render.template import owned_template
from gitops_kd.source.model import DesiredState
from gitops_kd.spec.model import KDApp, KDCluster
from gitops_kd.spec.upgrade import order_roles


def plan(desired: DesiredState, observed: ObservedState, *, now: datetime) -> Plan:
    """The plan for the whole desired state. ``now`` is the only clock (timeouts, gate periods)."""
    report = diff(desired, observed)
    if report.refused:
        return Plan((), report.refusals)
    rollouts: list[Action] = []
    clusters: list[Action] = []
    steps: list[Action] = []
    busy_wave: dict[tuple[str, str], int] = {}  # app -> lowest wave with a cluster still rolling out
    for key in sorted(desired.clusters, key=lambda k: (desired.clusters[k].wave, k)):
        cdiff = report.cluster(key)
        if cdiff is None:
            continue
        if not cdiff.exists or cdiff.needs_apply:
            clusters.append(ApplyCluster(key[0], key[1], cluster_manifest(desired.clusters[key], key),
                                         create=not cdiff.exists))
        live = observed.clusters.get(key)
        if live is None or cdiff.app is None or cdiff.transition is None:
            continue
        wave = desired.clusters[key].wave
        ensure = _ensure_rollout(desired, live, cdiff.transition, desired.apps[cdiff.app].name)
        if ensure is not None:
            rollouts.append(ensure)
        elif live.rollout is not None and live.rollout.stalled:
            busy_wave.setdefault(cdiff.app, wave)
            continue  # stalled until the desired state changes (new target or commit)
        found = cluster_steps(desired.apps[cdiff.app], desired.clusters[key], live, cdiff, ensure, now)
        if found or ensure is not None:
            earlier = busy_wave.setdefault(cdiff.app, wave)
            if earlier < wave:
                found = [Wait(f"clusters of app {cdiff.app[1]} in wave {earlier} to finish first", POLL_SECONDS,
                              key)]
        steps += found
    apps = [ApplyApp(k[0], k[1], app_manifest(desired.apps[k], k), desired.apps[k].version)
            for k in sorted(desired.apps) if (d := report.app(k)) is not None and d.needs_apply]
    actions = rollouts + apps + clusters + steps
    return Plan(tuple([a for a in actions if not isinstance(a, Wait)] + [a for a in actions if isinstance(a, Wait)]))


def _ensure_rollout(desired: DesiredState, live: ObservedCluster, t: Transition, app_name: str) -> EnsureRollout | None:
    """EnsureRollout when the cluster has no rollout, or one for another target, or a stalled one from an
    older commit (a new commit retries)."""
    rollout = live.rollout
    if rollout is not None and rollout.target_version == t.target_version and not (
            rollout.stalled and rollout.commit != desired.commit):
        return None
    left = t.left_stanza.to_annotation() if t.left_stanza is not None else None
    return EnsureRollout(live.namespace, live.name, app_name, t.target_version, t.from_version, desired.commit,
                         t.direction, live.uid, left)


def role_order(app: KDApp, t: Transition, live: ObservedCluster) -> tuple[str, ...]:
    """Roles with a StatefulSet, in the upgrade order of the target's stanza (spec order without one)."""
    ids = order_roles(t.stanza.role_order, app.role_ids) if t.stanza is not None else app.role_ids
    return tuple(r for r in ids if live.statefulset(r) is not None)


def cluster_steps(app: KDApp, cluster: KDCluster, live: ObservedCluster, cdiff: ClusterDiff,
                  ensure: EnsureRollout | None, now: datetime) -> list[Action]:
    """SetOnDelete, PatchTemplate, PatchServicePorts, then the pod phase and FinishRollout of one cluster."""
    t = cdiff.transition
    assert t is not None
    order = role_order(app, t, live)
    out: list[Action] = []
    for rid in order:
        sts = live.statefulsets[rid]
        if sts.update_strategy != ON_DELETE:
            out.append(SetOnDelete(live.namespace, sts.name, rid, live.name))
    role_diffs = {r.role: r for r in cdiff.roles}
    for rid in order:
        if rid in role_diffs:
            sts = live.statefulsets[rid]
            owned = owned_template(app, cluster, rid, from_version=t.from_version, rules=t.rules)
            patch = template_patch(sts.template, owned)
            if patch is not None:
                out.append(PatchTemplate(live.namespace, sts.name, rid, patch, live.name, role_diffs[rid].fields))
    for ports in cdiff.ports:
        out.append(PatchServicePorts(live.namespace, ports.service,
                                     tuple({"name": n, "port": p} for n, p in ports.ports), live.name))
    rollout = live.rollout if ensure is None else None
    ctx = PodContext(app, live, t, rollout, order, frozenset(role_diffs), now)
    if not out and _steady(live, t, ensure, ctx):
        return []
    unsettled = [live.statefulsets[r].name for r in order
                 if r not in role_diffs and not live.statefulsets[r].settled]
    if unsettled:
        return out + [Wait(f"StatefulSet {unsettled[0]} to observe its new spec", POLL_SECONDS, live.key)]
    pods, finished = pod_steps(ctx)
    out += pods
    if finished and not out and ensure is None and (
            rollout is None or rollout.phase != "Idle" or rollout.app_version != t.target_version):
        out.append(FinishRollout(live.namespace, live.name, t.target_version))
    return out


def _steady(live: ObservedCluster, t: Transition, ensure: EnsureRollout | None, ctx: PodContext) -> bool:
    """True when the rollout is finished at the target and every pod runs the current template."""
    rollout: ObservedRollout | None = live.rollout
    if ensure is not None or rollout is None or rollout.phase != "Idle" or rollout.app_version != t.target_version:
        return False
    return not any(outdated(ctx, p) for p in live.all_pods())


__all__ = ["cluster_steps", "plan", "role_order"]
