"""plan(desired, observed, now): the ordered actions that move the cluster towards Git (pure, deterministic).

Order: the KDRollouts of clusters whose app version changes (recording the version being left while the
live KDApp still shows it), the KDApps, KDCluster creations and spec updates, then per cluster (by wave,
namespace, name): SetOnDelete, RestoreLabels (plan/labels.py) and PatchTemplate of every role, the ports of
each member Service whose own pod is replaced or being replaced (plan/services.py: a Service moves with its pod,
never before it), then the pod phase (plan/pods.py) and FinishRollout; last, a ClearBreakGlass per break-glass
annotation left on a managed object (plan/breakglass.py). A managed cluster's KDRollout gets a RecordUnreachable
when its status.unreachable differs from the members its Services and pods show unreachable (plan/reach.py).
A cluster heading for a new version waits while a cluster of the same
app in a lower gitops-kd.io/wave is not Ready at the target or has not soaked yet (plan/waves.py). A
Stalled rollout gets only its failure policy (plan/failure.py); one stalled by a KDApp / KDCluster write that
keeps failing (ApplyRefused / ApplyFailed) gets that write, and a LiftStall once Git no longer asks for it.
An adoption (a cluster whose pods already run the target) is recorded Ready only when every member Git asks
for is Ready, else Reconciling until FinishRollout. Wait actions come last, so ``Plan.next()`` is real work
when any exists. On KubeDirector's live-app-upgrade branch a cluster whose spec.app Git moves to another KDApp
is switched natively first (plan/native.py), then upgraded as any other. A KDApp that clusters use is not applied
while Git changes its spec: stock KubeDirector holds
it (plan/held.py; the plan's notes say so) and the clusters move at the StatefulSet level. Any refusal from the
diff refuses the whole plan: its only actions then stall rollouts that say Ready over pods running another
version (plan/truth.py). A suspended cluster (plan/suspend.py) gets
no action but its note and a Wait.
"""

from __future__ import annotations

from datetime import datetime

from gitops_kd.constants import APPLIED_ANNOTATION, Phase
from gitops_kd.diff.engine import (
    annotation,
    diff,
    frozen_app_manifest,
    frozen_cluster_manifest,
    memo_owned_template,
    users_of,
)
from gitops_kd.diff.model import AppDiff, ClusterDiff, DiffReport, Transition
from gitops_kd.diff.switch import switch_of
from gitops_kd.kd.layout import KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.observed import ON_DELETE, ObservedCluster, ObservedRollout, ObservedState
from gitops_kd.plan.actions import (
    ADOPT,
    REBUILD,
    Action,
    ApplyApp,
    ApplyCluster,
    EnsureRollout,
    FinishRollout,
    LiftStall,
    MarkMissing,
    NoteStep,
    PatchTemplate,
    Plan,
    RecordStages,
    Refusal,
    RestoreLabels,
    SetOnDelete,
    Wait,
    waits_last,
)
from gitops_kd.plan.breakglass import left_break_glass
from gitops_kd.plan.failure import failure_action
from gitops_kd.plan.held import Held, held, held_refusals
from gitops_kd.plan.labels import labels_to_restore
from gitops_kd.plan.native import switch_steps
from gitops_kd.plan.pods import POLL_SECONDS, PodContext, outdated, pod_stages, pod_steps
from gitops_kd.plan.prune import prune as prune_orphans
from gitops_kd.plan.reach import record_unreachable
from gitops_kd.plan.services import service_steps
from gitops_kd.plan.suspend import hold_suspended
from gitops_kd.plan.truth import pods_off_version, role_images
from gitops_kd.plan.waves import (
    SOAK_ANNOTATION,
    WAITING_PREFIX,
    WaveMember,
    blocked,
    members_by_app,
    ready_since,
    soak_seconds,
)
from gitops_kd.render.compare import template_patch
from gitops_kd.spec.model import KDApp, KDCluster
from gitops_kd.spec.state import DesiredState, Key
from gitops_kd.spec.upgrade import order_roles


def plan(
    desired: DesiredState,
    observed: ObservedState,
    *,
    now: datetime,
    wave_soak_seconds: float = 0.0,
    prune: bool = False,
    partial: bool = False,
    suspend: bool = True,
) -> Plan:
    """The plan for the whole desired state. ``now`` is the only clock (timeouts, gate periods, soak);
    ``wave_soak_seconds`` is how long a wave must have been Ready before the next wave starts (a cluster's
    gitops-kd.io/wave-soak-seconds annotation overrides it); ``prune`` deletes what gitops-kd applied and
    Git no longer has (plan/prune.py). ``partial``: ``desired`` is the part one work key needs (plan/focus.py):
    nothing is pruned (that needs the whole state) and the diff memos keep the other parts' entries. ``suspend``
    False plans suspended clusters as if they were not (`gitops-kd diff`: what Git would change there)."""
    report = diff(desired, observed, new_round=not partial)
    if report.refused:  # nothing is written, but Ready is never left standing over pods of another version
        return Plan(tuple(pods_off_version(observed.clusters.values(), desired)), report.refusals)
    holds = _holds(desired, observed, report)
    soaks, bad = _soaks(desired, wave_soak_seconds)
    bad += [r for k in sorted(holds) for r in held_refusals(desired.apps[k], holds[k], observed.apps[k])]
    pruned = prune_orphans(desired, observed, enabled=prune and not partial)
    if bad or pruned.refusals:
        return Plan(tuple(pods_off_version(observed.clusters.values(), desired)), tuple(bad) + pruned.refusals)
    rollouts: list[Action] = []
    clusters: list[Action] = []
    failures: list[Action] = []
    records: list[Action] = []  # status.unreachable kept equal to what the Services and pods show (plan/reach.py)
    found_steps: dict[Key, list[Action]] = {}
    moving: set[Key] = set()  # clusters heading for a version they are not Ready at yet (wave-gated)
    members: dict[Key, tuple[Key, WaveMember]] = {}
    users: dict[Key, list[Key]] = {}  # per app: the live clusters using it (their KDRollouts count its failures)
    for key in sorted(desired.clusters, key=lambda k: (desired.clusters[k].wave, k)):
        cdiff = report.cluster(key)
        if cdiff is None:
            continue
        moved = switch_of(desired, observed, key)  # the live-app-upgrade branch's native path (plan/native.py)
        if (not cdiff.exists or cdiff.needs_apply) and moved is None:
            clusters.append(
                ApplyCluster(
                    key[0],
                    key[1],
                    frozen_cluster_manifest(desired.clusters[key], key),
                    create=not cdiff.exists,
                    counted=_counts(observed.clusters.get(key), (KDCLUSTER_KIND, *key)),
                )
            )
        if cdiff.app is None:
            continue
        wave = desired.clusters[key].wave
        live = observed.clusters.get(key)
        if live is not None:
            users.setdefault(cdiff.app, []).append(key)
            records += record_unreachable(live)
        if live is None or cdiff.transition is None:
            members[key] = (cdiff.app, WaveMember(key, wave, None, soaks[key]))
            continue
        t = cdiff.transition
        app_name = desired.apps[cdiff.app].name
        held_note = holds[cdiff.app].note if cdiff.app in holds else ""
        ensure = _ensure_rollout(desired, live, t, desired.apps[cdiff.app], desired.clusters[key], held_note)
        missing = missing_role(desired.apps[cdiff.app], desired.clusters[key], live)
        if missing is not None and ensure is not None and ensure.direction == ADOPT:
            # KubeDirector is still creating the cluster: adopting it now would mark it Ready too early
            members[key] = (cdiff.app, WaveMember(key, wave, None, soaks[key]))
            moving.add(key)
            found_steps[key] = [_kd_wait(live, missing)]
            continue
        if ensure is not None:
            rollouts.append(ensure)
        elif live.rollout is not None and live.rollout.stalled:
            members[key] = (cdiff.app, WaveMember(key, wave, None, soaks[key]))
            if live.rollout.apply_stalled:  # a write failing again and again: the executor retries it
                lift = _lift_apply_stall(live, cdiff, report.app(cdiff.app), cdiff.app in holds)
                if lift is not None:
                    failures.append(lift)
                continue
            handle = failure_action(app_name, live, t)
            if handle is not None:
                failures.append(handle)
            continue  # stalled until the desired state changes (new target or commit)
        if moved is not None:
            app_diff = report.app(cdiff.app)
            found_steps[key] = switch_steps(
                moved,
                live,
                observed,
                ensure,
                digest=_digest(desired.clusters[key], key),
                target_pending=app_diff is not None and app_diff.needs_apply,
            )
            members[key] = (cdiff.app, WaveMember(key, wave, None, soaks[key]))
            moving.add(key)
            continue
        found = cluster_steps(desired.apps[cdiff.app], desired.clusters[key], live, cdiff, ensure, now, held_note)
        if missing is not None:  # not finished (nor in sync) while a role's StatefulSet is still to come
            found = [*filter(lambda a: not isinstance(a, FinishRollout), found), _kd_wait(live, missing)]
            if live.rollout is not None and not live.rollout.reconciling and not live.rollout.stalled:
                found.insert(0, MarkMissing(key[0], key[1], missing))  # Ready no more (deleted out of band)
        settled = ready_since(live, t.target_version) if not found and ensure is None else None
        members[key] = (cdiff.app, WaveMember(key, wave, settled, soaks[key]))
        if ensure is not None or ready_since(live, t.target_version) is None and _heading(live, t.target_version):
            moving.add(key)
        found_steps[key] = found
    steps: list[Action] = []
    by_app = members_by_app(members)
    for key, found in found_steps.items():
        app_key, member = members[key]
        block = blocked(member.wave, by_app[app_key], app_key[1], now) if key in moving else None
        live = observed.clusters.get(key)
        noted = live.rollout.step if live is not None and live.rollout is not None else None  # None: no note possible
        if block is not None and found:
            note: list[Action] = [NoteStep(key[0], key[1], block.step)] if noted is not None and noted != block.step else []
            found = note + [Wait(block.reason, block.requeue_after, key)]
        elif found and noted is not None and noted.startswith(WAITING_PREFIX):
            found = [NoteStep(key[0], key[1], None)] + found  # the wave let it go: clear the note
        steps += found
    apps = [
        ApplyApp(
            k[0],
            k[1],
            frozen_app_manifest(desired.apps[k], k),
            desired.apps[k].version,
            tuple(users.get(k, ())),
            tuple(u for u in users.get(k, ()) if _counts(observed.clusters.get(u), (KDAPP_KIND, *k))),
        )
        for k in sorted(desired.apps)
        if (d := report.app(k)) is not None and d.needs_apply and k not in holds
    ]
    actions: list[Action] = [
        *rollouts,
        *apps,
        *clusters,
        *failures,
        *records,
        *steps,
        *pruned.actions,
        *left_break_glass(desired, observed),
    ]
    kept = pruned.kept + tuple(holds[k].describe() for k in sorted(holds))
    return Plan(waits_last(hold_suspended(actions, observed) if suspend else actions), kept=kept)


def _digest(cluster: KDCluster, key: Key) -> str:
    """Git's manifest digest of the cluster (APPLIED_ANNOTATION), which a switch stamps."""
    return str(annotation(frozen_cluster_manifest(cluster, key), APPLIED_ANNOTATION) or "")


def _holds(desired: DesiredState, observed: ObservedState, report: DiffReport) -> dict[Key, Held]:
    """The KDApps stock KubeDirector holds at their live spec (clusters use them and Git changes it): plan/held.py."""
    out: dict[Key, Held] = {}
    for k in desired.apps:
        d = report.app(k)
        if d is None or not d.needs_apply or k not in observed.apps:
            continue  # nothing to write (steady state: no lookup of users)
        found = held(desired.apps[k], k, observed.apps.get(k), users_of(desired, observed, k), True)
        if found is not None:
            out[k] = found
    return out


def _heading(live: ObservedCluster, target: str) -> bool:
    """True while the cluster's rollout is not finished at ``target`` (a version change in progress)."""
    ro = live.rollout
    return ro is None or ro.phase != Phase.IDLE or ro.app_version != target


def _soaks(desired: DesiredState, default: float) -> tuple[dict[Key, float], list[Refusal]]:
    """Each desired cluster's soak; a bad gitops-kd.io/wave-soak-seconds annotation is a refusal."""
    soaks: dict[Key, float] = {}
    bad: list[Refusal] = []
    for key, cluster in desired.clusters.items():
        try:
            soaks[key] = soak_seconds(cluster, default)
        except ValueError:
            bad.append(Refusal(cluster.source, f"metadata.annotations[{SOAK_ANNOTATION}]", "must be a number of seconds >= 0"))
            soaks[key] = default
    return soaks, bad


def _ensure_rollout(
    desired: DesiredState, live: ObservedCluster, t: Transition, app: KDApp, cluster: KDCluster, note: str = ""
) -> EnsureRollout | None:
    """EnsureRollout when the cluster has no rollout, or one for another target, or a stalled one from an
    older commit (a new commit retries; an apply stall is lifted by its write instead: _lift_apply_stall).
    An adoption is recorded Ready only when every member Git asks for is Ready (``members_ready``)."""
    rollout = live.rollout
    if (
        rollout is not None
        and rollout.target_version == t.target_version
        and not (rollout.stalled and not rollout.apply_stalled and rollout.commit != desired.commit)
        and not (t.direction == REBUILD and (rollout.direction != REBUILD or rollout.phase == Phase.IDLE))
    ):
        return None
    left = t.left_stanza.to_annotation() if t.left_stanza is not None else None
    adopt = t.direction == ADOPT
    return EnsureRollout(
        live.namespace,
        live.name,
        app.name,
        t.target_version,
        t.from_version,
        desired.commit,
        t.direction,
        live.uid,
        left,
        desired.subject,
        adopt and annotation(live.raw, APPLIED_ANNOTATION) is not None,
        not adopt or unready_role(app, cluster, live) is None,
        app.upgrade.to_annotation() if app.upgrade is not None else None,
        role_images(app) if adopt else (),
        note,
    )


def _counts(live: ObservedCluster | None, what: tuple[str, str, str]) -> bool:
    """True when the cluster's KDRollout counts failures of the write of ``what`` (kind, namespace, name)."""
    return live is not None and live.rollout is not None and live.rollout.apply_failure_of == what


def _lift_apply_stall(live: ObservedCluster, cdiff: ClusterDiff, app: AppDiff | None, app_held: bool = False) -> LiftStall | None:
    """LiftStall for a rollout stalled by a write (status.applyFailure) that Git no longer asks for: a new commit
    made the object match the live one, the write is another object's, or it is the KDApp's and stock KubeDirector
    holds it (``app_held``: the upgrade goes on at the StatefulSet level). None while it is still planned (its
    executor retries it: success lifts the stall, a changed manifest starts the count again)."""
    recorded = live.rollout.apply_failure_of if live.rollout is not None else None
    if recorded == (KDCLUSTER_KIND, *live.key) and (not cdiff.exists or cdiff.needs_apply):
        return None
    is_app = app is not None and cdiff.app is not None and recorded == (KDAPP_KIND, *cdiff.app)
    if is_app and app is not None and app.needs_apply and not app_held:
        return None
    what = f"{recorded[0]} {recorded[1]}/{recorded[2]}" if recorded else "the failing write"
    if is_app and app_held:
        return LiftStall(
            live.namespace,
            live.name,
            f"the write of {what} is no longer made: KubeDirector holds the "
            "KDApp while clusters use it; the upgrade goes on at the "
            "StatefulSet level",
        )
    return LiftStall(live.namespace, live.name, f"Git no longer asks for the write of {what} that stalled it")


def missing_role(app: KDApp, cluster: KDCluster, live: ObservedCluster) -> str | None:
    """The first role with members in Git whose StatefulSet KubeDirector has not created yet, or None."""
    app_roles = set(app.role_ids)
    for role in cluster.roles:
        if role.id in app_roles and role.members_for(app.role(role.id)) and live.statefulset(role.id) is None:
            return role.id
    return None


def unready_role(app: KDApp, cluster: KDCluster, live: ObservedCluster) -> str | None:
    """The first role with fewer Ready members (not being deleted) than Git asks for, or None."""
    app_roles = set(app.role_ids)
    for role in cluster.roles:
        if role.id in app_roles and sum(1 for p in live.pods.get(role.id, ()) if p.up) < role.members_for(app.role(role.id)):
            return role.id
    return None


def _kd_wait(live: ObservedCluster, role: str) -> Wait:
    return Wait(f"KubeDirector to create the StatefulSet of role {role}", POLL_SECONDS, live.key)


def role_order(app: KDApp, t: Transition, live: ObservedCluster) -> tuple[str, ...]:
    """Roles with a StatefulSet, in the upgrade order of the target's stanza (spec order without one)."""
    ids = order_roles(t.stanza.role_order, app.role_ids) if t.stanza is not None else app.role_ids
    return tuple(r for r in ids if live.statefulset(r) is not None)


def cluster_steps(
    app: KDApp,
    cluster: KDCluster,
    live: ObservedCluster,
    cdiff: ClusterDiff,
    ensure: EnsureRollout | None,
    now: datetime,
    note: str = "",
) -> list[Action]:
    """SetOnDelete, PatchTemplate, PatchServicePorts of the member Services whose pod is replaced or being
    replaced (plan/services.py), then the pod phase and FinishRollout of one cluster (``note``: what its Ready
    message adds, e.g. the KDApp held by KubeDirector)."""
    t = cdiff.transition
    assert t is not None
    order = role_order(app, t, live)
    out: list[Action] = []
    for rid in order:
        sts = live.statefulsets[rid]
        if sts.update_strategy != ON_DELETE:
            out.append(SetOnDelete(live.namespace, sts.name, rid, live.name))
        if relabel := labels_to_restore(live, rid):
            out.append(RestoreLabels(live.namespace, sts.name, rid, relabel, live.name))
    role_diffs = {r.role: r for r in cdiff.roles}
    for rid in order:
        if rid in role_diffs:
            sts = live.statefulsets[rid]
            owned = memo_owned_template(app, cluster, rid, from_version=t.from_version, rules=t.rules)
            patch = template_patch(sts.template, owned)
            if patch is not None:
                out.append(PatchTemplate(live.namespace, sts.name, rid, patch, live.name, role_diffs[rid].fields))
    rollout = live.rollout if ensure is None else None
    ctx = PodContext(app, live, t, rollout, order, frozenset(role_diffs), now)
    out += service_steps(ctx, cdiff.ports)  # each member's Service moves with its own pod (plan/services.py)
    if not out and _steady(live, t, ensure, ctx):
        return []
    unsettled = [live.statefulsets[r].name for r in order if r not in role_diffs and not live.statefulsets[r].settled]
    if unsettled:
        return out + [Wait(f"StatefulSet {unsettled[0]} to observe its new spec", POLL_SECONDS, live.key)]
    pods, finished = pod_steps(ctx)
    out += pods
    if (
        finished
        and not out
        and ensure is None
        and (rollout is None or rollout.phase != Phase.IDLE or rollout.app_version != t.target_version or rollout.reconciling)
    ):
        # an adoption counts Git's members: KubeDirector raises a StatefulSet's replicas as it adds them
        down = unready_role(app, cluster, live) if rollout is not None and rollout.direction == ADOPT else None
        out.append(
            FinishRollout(live.namespace, live.name, t.target_version, role_images(app), note)
            if down is None
            else Wait(f"the members of role {down} to be Ready", POLL_SECONDS, live.key)
        )
    return _record_stages(ctx) + out


def _record_stages(ctx: PodContext) -> list[Action]:
    """RecordStages first (a Wait of the cluster would hold it back) when a pod's stage differs from the one the
    KDRollout records, while an attempt moves pods (Upgrading, Downgrading); nothing before the attempt's status
    is written (EnsureRollout resets the pods), nor once Idle or Stalled (the record stays where it stopped)."""
    if ctx.rollout is None or ctx.rollout.phase not in (Phase.UPGRADING, Phase.DOWNGRADING):
        return []
    changed = tuple((pod, str(stage)) for pod, stage in pod_stages(ctx).items() if ctx.rollout.stage(pod) != stage)
    return [RecordStages(ctx.namespace, ctx.live.name, changed)] if changed else []


def _steady(live: ObservedCluster, t: Transition, ensure: EnsureRollout | None, ctx: PodContext) -> bool:
    """True when the rollout is finished at the target and every pod runs the current template."""
    rollout: ObservedRollout | None = live.rollout
    if (
        ensure is not None
        or rollout is None
        or rollout.phase != Phase.IDLE
        or rollout.app_version != t.target_version
        or rollout.reconciling
    ):  # an apply stall lifted: Ready again once steady (FinishRollout)
        return False
    return not any(outdated(ctx, p) for p in live.all_pods())


__all__ = ["cluster_steps", "missing_role", "plan", "role_order", "unready_role"]
