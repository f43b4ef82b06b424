"""EnsureRollout, StartGate, FinishRollout, Stall, LiftStall, the records (stages, unreachable members): the KDRollout
object and its status transitions."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from gitops_kd.constants import (
    ACTIVE_PHASES,
    MANAGED_BY_LABEL,
    MANAGER,
    REQUEUE_NOT_CACHED,
    ROLLOUT_API_VERSION,
    ROLLOUT_KIND,
    ROLLOUT_PLURAL,
)
from gitops_kd.execute.context import ExecContext, generation, rv
from gitops_kd.execute.outcome import Outcome
from gitops_kd.history.entries import attempt_of
from gitops_kd.kd.layout import API_VERSION, CLUSTER_LABEL, KDCLUSTER_KIND, ROLE_LABEL
from gitops_kd.observe.collector import Expectation
from gitops_kd.plan.actions import (
    ADOPT,
    DOWNGRADE,
    REBUILD,
    EnsureRollout,
    FinishRollout,
    LiftStall,
    MarkMissing,
    NoteStep,
    RecordInSync,
    RecordStages,
    RecordUnreachable,
    Stall,
    StartGate,
)
from gitops_kd.rollout.model import RolloutStatus, status_patch
from gitops_kd.status import events as ev
from gitops_kd.status import rollout as rs

log = logging.getLogger(__name__)


def _expect(obj: dict[str, Any]) -> tuple[Expectation, ...]:
    meta = obj.get("metadata") or {}
    return (Expectation(ROLLOUT_PLURAL, meta.get("namespace", ""), meta.get("name", ""), rv(obj)),)


def _create(ctx: ExecContext, a: EnsureRollout) -> dict[str, Any]:
    uid = a.cluster_uid or ((ctx.cluster(a.namespace, a.cluster) or {}).get("metadata") or {}).get("uid")
    meta: dict[str, Any] = {
        "name": a.cluster,
        "namespace": a.namespace,
        "labels": {CLUSTER_LABEL: a.cluster, MANAGED_BY_LABEL: MANAGER},
    }
    if uid:
        meta["ownerReferences"] = [
            {"apiVersion": API_VERSION, "kind": KDCLUSTER_KIND, "name": a.cluster, "uid": uid, "blockOwnerDeletion": False}
        ]
    body = {"apiVersion": ROLLOUT_API_VERSION, "kind": ROLLOUT_KIND, "metadata": meta, "spec": _spec(a)}
    return ctx.rest.create(ROLLOUT_API_VERSION, ROLLOUT_PLURAL, a.namespace, body)


def _spec(a: EnsureRollout) -> dict[str, Any]:
    spec: dict[str, Any] = {"app": a.app, "targetVersion": a.target_version}
    if a.commit:
        spec["commit"] = a.commit
    return spec


def _is_retry(status: RolloutStatus, a: EnsureRollout) -> bool:
    """A Stalled attempt to the same target, direction and origin, asked for by a newer commit."""
    return (
        status.stalled
        and status.target_version == a.target_version
        and status.commit != (a.commit or None)
        and status.direction == a.direction
        and status.from_version == (a.from_version or None)
    )


def _same_attempt(status: RolloutStatus, a: EnsureRollout) -> bool:
    return (
        status.target_version == a.target_version
        and status.direction == a.direction
        and status.phase in ACTIVE_PHASES
        and status.from_version == (a.from_version or None)
    )


def new_attempt_id() -> str:
    """A fresh attempt id: step markers and progress belong to one attempt (never reused by a later one)."""
    return uuid.uuid4().hex[:16]


def ensure_rollout(ctx: ExecContext, a: EnsureRollout) -> Outcome:
    """The spec (what Git asks: app, targetVersion, commit), then the attempt in ONE status write, each guarded
    by the resourceVersion just read (a deposed leader's write fails with 409; the next reconcile re-reads and
    re-plans): a failure between the two leaves the previous attempt in force (the planner reads the attempt
    from the status only), never a half-started one.

    A new commit with the same target and direction as a Stalled attempt resumes it, keeping its progress.
    """
    obj = ctx.rollout(a.namespace, a.cluster)
    changed = False
    if obj is None:
        obj = _create(ctx, a)
        changed = True
    elif (obj.get("spec") or {}) != {**(obj.get("spec") or {}), **_spec(a)}:
        obj = ctx.patch_rollout_spec(a.namespace, a.cluster, _spec(a), rv=rv(obj))
        changed = True
    status, gen = obj.get("status") or {}, generation(obj)
    if a.direction == ADOPT:
        if rs.is_finished(status, a.target_version, gen):
            return Outcome(a.describe(), changed, "already recorded", expect=_expect(obj))
        obj = ctx.patch_rollout_status(
            a.namespace,
            a.cluster,
            rs.adopt(
                status,
                app=a.app,
                version=a.target_version,
                commit=a.commit,
                subject=a.subject,
                generation=gen,
                now=ctx.now(),
                ready=a.members_ready,
                target_stanza=a.target_stanza,
                images=dict(a.images),
                note=a.note,
            ),
            rv=rv(obj),
        )
        if a.deployed:
            ctx.event_on_cluster(
                a.namespace, a.cluster, ev.DEPLOYED, f"created from Git and managed by gitops-kd at {a.app} {a.target_version}"
            )
        else:
            ctx.event_on_cluster(a.namespace, a.cluster, ev.ADOPTED, f"managed by gitops-kd at {a.app} {a.target_version}")
        return Outcome(a.describe(), True, "adopted", expect=_expect(obj))
    typed = RolloutStatus.from_obj(status)
    if _is_retry(typed, a):
        obj = ctx.patch_rollout_status(
            a.namespace,
            a.cluster,
            rs.resume(status, commit=a.commit, subject=a.subject, generation=gen, now=ctx.now()),
            rv=rv(obj),
        )
        ctx.event_on_cluster(
            a.namespace,
            a.cluster,
            ev.UPGRADE_STARTED,
            f"retrying the {a.direction} of {a.app} "
            f"to {a.target_version} after commit {(a.commit or '?')[:12]} (was stalled: "
            f"{typed.stalled_reason or '?'}); progress made so far is kept",
        )
        return Outcome(a.describe(), True, "stalled rollout resumed", expect=_expect(obj))
    if _same_attempt(typed, a):
        if typed.observed_generation != gen:
            obj = ctx.patch_rollout_status(a.namespace, a.cluster, status_patch(observed_generation=gen), rv=rv(obj))
        return Outcome(a.describe(), changed, "rollout already started", expect=_expect(obj))
    previous = attempt_of(status, {}) if typed.target_version else None
    obj = ctx.patch_rollout_status(
        a.namespace,
        a.cluster,
        rs.start(
            status,
            direction=a.direction,
            app=a.app,
            target=a.target_version,
            from_version=a.from_version,
            commit=a.commit,
            subject=a.subject,
            attempt=new_attempt_id(),
            from_stanza=a.from_stanza,
            generation=gen,
            now=ctx.now(),
            previous=previous,
            target_stanza=a.target_stanza,
        ),
        rv=rv(obj),
    )
    reason = ev.DOWNGRADE_STARTED if a.direction == DOWNGRADE else ev.UPGRADE_STARTED
    what = (
        f"rebuild of {a.app} {a.target_version} (its pods do not run its template)"
        if a.direction == REBUILD
        else f"{a.direction} of {a.app} from {a.from_version or 'unknown'} to {a.target_version}"
    )
    ctx.event_on_cluster(a.namespace, a.cluster, reason, what + (f" (commit {a.commit[:12]})" if a.commit else ""))
    return Outcome(a.describe(), True, "rollout started", expect=_expect(obj))


def start_gate(ctx: ExecContext, a: StartGate) -> Outcome:
    obj = ctx.rollout(a.namespace, a.cluster)
    if obj is None:
        return Outcome(a.describe(), False, "no KDRollout", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    status = RolloutStatus.from_obj(obj.get("status"))
    if status.current_pod == a.pod and status.gate_started_at:
        return Outcome(a.describe(), False, "gate already started", expect=_expect(obj))
    pod = ctx.rest.get_or_none("v1", "pods", a.namespace, a.pod) or {}
    role = ((pod.get("metadata") or {}).get("labels") or {}).get(ROLE_LABEL)
    obj = ctx.patch_rollout_status(a.namespace, a.cluster, rs.gate_started(a.pod, role, ctx.now()), rv=rv(obj))
    ctx.event_on_cluster(a.namespace, a.cluster, ev.GATE_STARTED, f"waiting for the upgrade gate in pod {a.pod}")
    return Outcome(a.describe(), True, "gate started", expect=_expect(obj))


def finish_rollout(ctx: ExecContext, a: FinishRollout) -> Outcome:
    obj = ctx.rollout(a.namespace, a.cluster)
    if obj is None:
        return Outcome(a.describe(), False, "no KDRollout", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    status, gen = obj.get("status") or {}, generation(obj)
    typed = RolloutStatus.from_obj(status)
    if rs.is_finished(status, a.version, gen) and dict(typed.images) == dict(a.images):
        return Outcome(a.describe(), False, "already finished", expect=_expect(obj))
    was_active = typed.phase in ACTIVE_PHASES
    obj = ctx.patch_rollout_status(
        a.namespace,
        a.cluster,
        rs.finish(
            status,
            version=a.version,
            commit=typed.commit,
            generation=gen,
            now=ctx.now(),
            images=dict(a.images),
            note=a.note,
        ),
        rv=rv(obj),
    )
    if was_active:
        ctx.event_on_cluster(
            a.namespace,
            a.cluster,
            rs.succeeded_reason(status),
            f"all members run version {a.version} (from {typed.from_version or 'unknown'})",
        )
    return Outcome(a.describe(), True, "rollout finished", expect=_expect(obj))


def mark_missing(ctx: ExecContext, a: MarkMissing) -> Outcome:
    """Reconciling (StatefulSetMissing) in one guarded write, unless already so."""
    obj = ctx.rollout(a.namespace, a.cluster)
    if obj is None:
        return Outcome(a.describe(), False, "no KDRollout", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    status = obj.get("status") or {}
    if rs.is_statefulset_missing(status):
        return Outcome(a.describe(), False, "already marked", expect=_expect(obj))
    obj = ctx.patch_rollout_status(
        a.namespace, a.cluster, rs.statefulset_missing(status, role=a.role, generation=generation(obj), now=ctx.now()), rv=rv(obj)
    )
    return Outcome(a.describe(), True, "marked not Ready", expect=_expect(obj))


def note_step(ctx: ExecContext, a: NoteStep) -> Outcome:
    """status.step, with observedGeneration: the note is written having seen the current spec (suspend/resume)."""
    return _set_status(ctx, a, status_patch(step=a.step or None), "step noted", observed=True)


def record_in_sync(ctx: ExecContext, a: RecordInSync) -> Outcome:
    return _set_status(ctx, a, status_patch(synced_digest=a.digest, synced_commit=a.commit), "in sync recorded")


STAGES_PRUNED_RETRY = 60.0  # seconds before a stage record the API server pruned is tried again


def record_stages(ctx: ExecContext, a: RecordStages) -> Outcome:
    """status.pods[pod].stage for each pod of the action whose recorded stage differs, in one guarded write."""
    obj = ctx.rollout(a.namespace, a.cluster)
    if obj is None:
        return Outcome(a.describe(), False, "no KDRollout to write on", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    recorded = RolloutStatus.from_obj(obj.get("status"))
    changed = {pod: stage for pod, stage in a.stages if recorded.stage(pod) != stage}
    if not changed:
        return Outcome(a.describe(), False, "already there", expect=_expect(obj))
    obj = ctx.patch_rollout_status(a.namespace, a.cluster, rs.pod_stages(changed), rv=rv(obj))
    kept = RolloutStatus.from_obj(obj.get("status"))
    if any(kept.stage(pod) != stage for pod, stage in changed.items()):
        return Outcome(
            a.describe(),
            False,
            "the API server did not keep status.pods[].stage: the installed KDRollout "
            "CRD predates it (apply gitops_kd/crds); the rollout goes on without the record",
            failed=True,
            requeue_after=STAGES_PRUNED_RETRY,
        )
    return Outcome(a.describe(), True, "stages recorded", expect=_expect(obj))


def record_unreachable(ctx: ExecContext, a: RecordUnreachable) -> Outcome:
    """status.unreachable made the action's list (removed when empty), in one write guarded by resourceVersion."""
    obj = ctx.rollout(a.namespace, a.cluster)
    if obj is None:
        return Outcome(a.describe(), False, "no KDRollout to write on", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    if RolloutStatus.from_obj(obj.get("status")).unreachable == a.members:
        return Outcome(a.describe(), False, "already there", expect=_expect(obj))
    body = status_patch(unreachable=[m.to_obj() for m in a.members] or None)
    obj = ctx.patch_rollout_status(a.namespace, a.cluster, body, rv=rv(obj))
    if RolloutStatus.from_obj(obj.get("status")).unreachable != a.members:
        return Outcome(
            a.describe(),
            False,
            "the API server did not keep status.unreachable: the installed KDRollout CRD predates it "
            "(apply gitops_kd/crds); the rollout goes on without the record",
            failed=True,
            requeue_after=STAGES_PRUNED_RETRY,
        )
    return Outcome(a.describe(), True, "unreachable members recorded", expect=_expect(obj))


def _set_status(
    ctx: ExecContext, a: NoteStep | RecordInSync, fields: dict[str, Any], done: str, *, observed: bool = False
) -> Outcome:
    """Merge-patch ``fields`` into the KDRollout's status unless it already holds them (None: absent); with
    ``observed``, status.observedGeneration too (the fields were derived from the current spec)."""
    obj = ctx.rollout(a.namespace, a.cluster)
    if obj is None:
        return Outcome(a.describe(), False, "no KDRollout to write on", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    if observed:
        fields = {**fields, **status_patch(observed_generation=generation(obj))}
    status = obj.get("status") or {}
    if all((status.get(k) or None) == v for k, v in fields.items()):
        return Outcome(a.describe(), False, "already there", expect=_expect(obj))
    obj = ctx.patch_rollout_status(a.namespace, a.cluster, fields, rv=rv(obj))
    return Outcome(a.describe(), True, done, expect=_expect(obj))


def stall(ctx: ExecContext, a: Stall) -> Outcome:
    obj = ctx.rollout(a.namespace, a.cluster)
    if obj is None:
        return Outcome(a.describe(), False, "no KDRollout to stall", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    status = obj.get("status") or {}
    if rs.is_stalled(status, a.reason, a.message):
        return Outcome(a.describe(), False, "already stalled", expect=_expect(obj))
    obj = ctx.patch_rollout_status(
        a.namespace,
        a.cluster,
        rs.stall(status, reason=a.reason, message=a.message, generation=generation(obj), now=ctx.now()),
        rv=rv(obj),
    )
    ctx.event_on_cluster(a.namespace, a.cluster, ev.UPGRADE_STALLED, f"{a.reason}: {a.message}", warning=True)
    return Outcome(a.describe(), True, "rollout stalled", expect=_expect(obj))


def lift_stall(ctx: ExecContext, a: LiftStall) -> Outcome:
    """End an apply stall Git no longer asks for (status.applyFailure dropped, Reconciling) in one guarded write."""
    obj = ctx.rollout(a.namespace, a.cluster)
    if obj is None:
        return Outcome(a.describe(), False, "no KDRollout", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    status = obj.get("status") or {}
    if not rs.apply_stalled(status):
        return Outcome(a.describe(), False, "not stalled by a write", expect=_expect(obj))
    obj = ctx.patch_rollout_status(
        a.namespace, a.cluster, rs.lift_apply_stall(status, a.message, generation=generation(obj), now=ctx.now()), rv=rv(obj)
    )
    ctx.event_on_cluster(a.namespace, a.cluster, ev.STALL_LIFTED, a.message)
    return Outcome(a.describe(), True, "stall lifted", expect=_expect(obj))
