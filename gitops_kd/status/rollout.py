"""KDRollout status transitions as merge-patch bodies for the status subresource (pure).

Each transition is one patch built with rollout.model's ``status_patch`` (RolloutStatus field names; the model
spells the status keys) and reads the status it starts from through ``RolloutStatus``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gitops_kd.constants import (
    APPLY_STALL_REASONS,
    KUBEDIRECTOR_READY_CONDITION,
    WAITING_FOR_KUBEDIRECTOR,
    Phase,
    StallReason,
)
from gitops_kd.history.entries import DEPLOYED, attempt_of, closing_entry
from gitops_kd.rollout.model import PODS_FIELD, STAGE_FIELD, ApplyFailure, RolloutStatus, status_patch, stored_history
from gitops_kd.status import conditions as cond
from gitops_kd.status import events as ev
from gitops_kd.status.conditions import rfc3339

HISTORY_LIMIT = 10
MEMBERS_NOT_READY = "MembersNotReady"  # Reconciling reason of an adoption whose members are not all Ready yet
STATEFULSET_MISSING = "StatefulSetMissing"  # Reconciling reason while a role's StatefulSet Git asks for is gone

Status = Mapping[str, Any]


def _conds(status: Status) -> list[dict[str, Any]]:
    return [dict(c) for c in RolloutStatus.from_obj(status).conditions]


def _ready_conds(status: Status, reason: str, message: str, *, generation: int, now: datetime) -> list[dict[str, Any]]:
    """Ready=True, and KubeDirectorReady gone: KubeDirector reports the cluster ready (the planner checked)."""
    return cond.delete(
        cond.mark_ready(_conds(status), reason, message, generation=generation, now=now), KUBEDIRECTOR_READY_CONDITION
    )


def _clear_pods(status: Status) -> dict[str, None]:
    """Merge-patch entries deleting every pod progress entry (an emptied entry too: the keys as stored)."""
    pods = status.get(PODS_FIELD)
    return {name: None for name in pods} if isinstance(pods, Mapping) else {}


def start(
    status: Status,
    *,
    direction: str,
    app: str,
    target: str,
    from_version: str | None,
    commit: str | None,
    attempt: str,
    from_stanza: str | None,
    generation: int,
    now: datetime,
    previous: Mapping[str, Any] | None = None,
    subject: str = "",
    target_stanza: str | None = None,
) -> dict[str, Any]:
    """A new attempt (upgrade/downgrade/rebuild) towards `target`, recorded whole in ONE status write: its id,
    direction, from and target versions, commit (and its subject) and the upgrade stanza of the version being
    left; progress reset, Reconciling=True. `previous` is the attempt before this one: if it did not finish it
    is closed in status.history (Stalled, Reverted or Superseded). A write's failures counted before are dropped
    (status.applyFailure): the new commit asks for new writes."""
    phase = Phase.DOWNGRADING if direction == "downgrade" else Phase.UPGRADING
    verb = {"downgrade": "downgrading", "rebuild": "rebuilding"}.get(direction, "upgrading")
    origin = (
        f"at {target} (the pods do not run its template)"
        if direction == "rebuild"
        else f"from {from_version or 'unknown'} to {target}"
    )
    message = f"{verb} {app} {origin}" + (f" (commit {commit[:12]})" if commit else "")
    reason = verb.capitalize()
    extra: dict[str, Any] = {}
    closing = closing_entry(status, previous, now=rfc3339(now)) if previous else None
    if closing is not None:
        extra["history"] = (stored_history(status) + [closing])[-HISTORY_LIMIT:]
    return status_patch(
        **extra,
        observed_generation=generation,
        phase=phase,
        direction=direction,
        app=app,
        from_version=from_version,
        target_version=target,
        attempt=attempt,
        commit=commit,
        commit_subject=subject or None,
        from_stanza=from_stanza,
        target_stanza=target_stanza,
        app_version=RolloutStatus.from_obj(status).app_version or from_version,
        started_at=rfc3339(now),
        images=None,
        pods=_clear_pods(status) or None,
        current_role=None,
        current_pod=None,
        gate_started_at=None,
        gate_checked_at=None,
        stalled_reason=None,
        apply_failure=None,
        step="started",
        message=message,
        conditions=cond.mark_reconciling(_conds(status), reason, message, generation=generation, now=now),
    )


def resume(status: Status, *, commit: str | None, generation: int, now: datetime, subject: str = "") -> dict[str, Any]:
    """A stalled attempt retried by a new commit: same attempt, progress kept (done steps stay done),
    Reconciling again; the commit is the retrying one. The stall of the commit before is closed in
    status.history (Stalled, with its reason), so the history never folds it into the fix."""
    st = RolloutStatus.from_obj(status)
    phase = Phase.DOWNGRADING if st.direction == "downgrade" else Phase.UPGRADING
    message = f"retrying after commit {(commit or '?')[:12]} (was stalled: {st.stalled_reason or '?'})"
    extra: dict[str, Any] = {}
    stalled = closing_entry(status, attempt_of(status, {}), now=rfc3339(now)) if st.commit != (commit or None) else None
    if stalled is not None:
        extra["history"] = (stored_history(status) + [stalled])[-HISTORY_LIMIT:]
    return status_patch(
        **extra,
        observed_generation=generation,
        phase=phase,
        stalled_reason=None,
        message=message,
        commit=commit,
        commit_subject=subject or None,
        gate_started_at=None,
        gate_checked_at=None,
        step="resumed",
        conditions=cond.mark_reconciling(_conds(status), "Retrying", message, generation=generation, now=now),
    )


def adopt(
    status: Status,
    *,
    app: str,
    version: str,
    commit: str | None,
    generation: int,
    now: datetime,
    subject: str = "",
    ready: bool = True,
    target_stanza: str | None = None,
    images: Mapping[str, str] | None = None,
    note: str = "",
) -> dict[str, Any]:
    """A cluster whose pods all run `version`'s image and that had no rollout: Idle and Ready, or, while a member
    Git asks for is missing or not Ready (`ready` False), Idle and Reconciling until FinishRollout. The first time
    (no version recorded yet) a history entry says from when gitops-kd manages it at `version` (Deployed)."""
    message = (
        f"all members run {app} {version}" if ready else f"the members run {app} {version}; waiting for every member to be Ready"
    ) + (f"; {note}" if note else "")
    extra: dict[str, Any] = {}
    st = RolloutStatus.from_obj(status)
    if not st.app_version and not st.history:
        first = {"app": app, "version": version, "startedAt": rfc3339(now), "finishedAt": rfc3339(now), "result": DEPLOYED}
        first.update({k: v for k, v in (("commit", commit), ("subject", subject)) if v})  # no fromVersion: none before
        extra["history"] = [first]
    return status_patch(
        **extra,
        observed_generation=generation,
        phase=Phase.IDLE,
        direction="adopt",
        app=app,
        app_version=version,
        target_version=version,
        from_version=None,
        commit=commit,
        commit_subject=subject or None,
        attempt=None,
        from_stanza=None,
        target_stanza=target_stanza,
        stalled_reason=None,
        apply_failure=None,
        images=_images(status, images) if ready else None,
        step=None,
        message=message,
        conditions=_ready_conds(status, "UpToDate", message, generation=generation, now=now)
        if ready
        else cond.mark_reconciling(_conds(status), MEMBERS_NOT_READY, message, generation=generation, now=now),
    )


def pod_stages(stages: Mapping[str, str]) -> dict[str, Any]:
    """A merge patch setting status.pods[pod].stage for each pod of ``stages``."""
    return {PODS_FIELD: {pod: {STAGE_FIELD: stage} for pod, stage in stages.items()}}


def gate_started(pod: str, role: str | None, now: datetime) -> dict[str, Any]:
    """Gating of ``pod`` (of ``role``) starts now: the gate's clock and the pod the rollout is at."""
    role_field = {"current_role": role} if role else {}
    return status_patch(current_pod=pod, gate_started_at=rfc3339(now), gate_checked_at=None, step=f"gating {pod}", **role_field)


def _images(status: Status, images: Mapping[str, str] | None) -> dict[str, Any] | None:
    """A merge patch making status.images exactly ``images`` (role -> image the version renders)."""
    if not images:
        return None
    return {**{k: None for k in RolloutStatus.from_obj(status).images}, **dict(images)}


def finish(
    status: Status,
    *,
    version: str,
    commit: str | None,
    generation: int,
    now: datetime,
    images: Mapping[str, str] | None = None,
    note: str = "",
) -> dict[str, Any]:
    """Every member at `version`: Idle, Ready=True, a history entry (newest last, capped); ``images`` (role -> the
    app image `version` renders) is what the pods are held to while Ready; ``note`` is added to the message (the
    KDApp held by KubeDirector)."""
    st = RolloutStatus.from_obj(status)
    message = f"all members run version {version}" + (f"; {note}" if note else "")
    history = stored_history(status)
    if st.phase in (Phase.UPGRADING, Phase.DOWNGRADING, Phase.STALLED):
        entry = {
            **({"app": st.app} if st.app else {}),
            "version": version,
            "fromVersion": st.from_version or st.app_version,
            "commit": commit,
            "startedAt": st.started_at,
            "finishedAt": rfc3339(now),
            "result": "Succeeded",
        }
        history.append({**entry, "subject": st.commit_subject} if st.commit_subject else entry)
    return status_patch(
        observed_generation=generation,
        phase=Phase.IDLE,
        app_version=version,
        current_role=None,
        current_pod=None,
        gate_started_at=None,
        gate_checked_at=None,
        stalled_reason=None,
        step=None,
        message=message,
        history=history[-HISTORY_LIMIT:],
        images=_images(status, images),
        conditions=_ready_conds(status, succeeded_reason(status), message, generation=generation, now=now),
    )


def succeeded_reason(status: Status) -> str:
    """The Ready reason and Event of a finished attempt: DowngradeSucceeded for a downgrade, else UpgradeSucceeded."""
    return ev.DOWNGRADE_SUCCEEDED if RolloutStatus.from_obj(status).direction == "downgrade" else ev.UPGRADE_SUCCEEDED


def is_finished(status: Status, version: str, generation: int) -> bool:
    st = RolloutStatus.from_obj(status)
    return (
        st.phase == Phase.IDLE
        and st.app_version == version
        and st.observed_generation == generation
        and cond.is_true(st.conditions, cond.READY)
    )


def stall(status: Status, *, reason: str, message: str, generation: int, now: datetime) -> dict[str, Any]:
    """Stalled: no more steps until the operator or a new commit acts."""
    return status_patch(
        observed_generation=generation,
        phase=Phase.STALLED,
        stalled_reason=reason,
        message=message,
        conditions=cond.mark_stalled(_conds(status), reason, message, generation=generation, now=now),
    )


def is_stalled(status: Status, reason: str, message: str) -> bool:
    st = RolloutStatus.from_obj(status)
    return st.stalled and st.stalled_reason == reason and st.message == message


def apply_stalled(status: Status) -> bool:
    """Stalled because a KDApp / KDCluster write failed STALL_AFTER_FAILURES times in a row (not by a step)."""
    st = RolloutStatus.from_obj(status)
    return st.stalled and st.stalled_reason in APPLY_STALL_REASONS


def apply_failure(status: Status) -> ApplyFailure:
    """status.applyFailure (an empty record, no kind and 0 failures, when none)."""
    return RolloutStatus.from_obj(status).apply_failure or ApplyFailure()


def _stored(phase: Phase | str | None) -> str | None:
    return None if phase is None else str(phase)


def same_object(record: ApplyFailure, kind: str, namespace: str, name: str) -> bool:
    """True when ``record`` counts failures of a write of this object (whatever its manifest)."""
    return (record.kind, record.namespace, record.name) == (kind, namespace, name)


def same_write(record: ApplyFailure, kind: str, namespace: str, name: str, digest: str) -> bool:
    """True when ``record`` counts failures of this very write (same object, same manifest)."""
    return same_object(record, kind, namespace, name) and record.digest == digest


def count_apply_failure(status: Status, record: dict[str, Any], *, generation: int, now: datetime) -> dict[str, Any]:
    """One more failure of a write (``record``: kind, namespace, name, digest, failures, code, message): the
    record, and when the rollout is Stalled by an earlier, other write (Git changed the object since), the stall
    lifted. The phase before any apply stall is kept in the record, to go back to when the write succeeds."""
    previous = apply_failure(status)
    record = {**record, "phase": _stored(previous.phase if apply_stalled(status) else RolloutStatus.from_obj(status).phase)}
    if apply_stalled(status) and record.get("failures") == 1:
        return {
            **lift_apply_stall(
                status,
                f"{record['kind']} {record['namespace']}/{record['name']} changed in Git since the stall; retrying",
                generation=generation,
                now=now,
            ),
            **status_patch(apply_failure=record),
        }
    return status_patch(apply_failure=record)


def lift_apply_stall(status: Status, message: str, *, generation: int, now: datetime) -> dict[str, Any]:
    """The write of an apply stall succeeded or Git no longer asks for it: the record dropped and, when Stalled
    by it, the phase from before the stall with Reconciling=True (Ready comes when the cluster is steady)."""
    if not apply_stalled(status):
        return status_patch(apply_failure=None)
    phase = apply_failure(status).phase
    return status_patch(
        apply_failure=None,
        observed_generation=generation,
        phase=phase if phase in (Phase.IDLE, Phase.UPGRADING, Phase.DOWNGRADING) else Phase.IDLE,
        stalled_reason=None,
        message=message,
        conditions=cond.mark_reconciling(_conds(status), "Retrying", message, generation=generation, now=now),
    )


def statefulset_missing(status: Status, *, role: str, generation: int, now: datetime) -> dict[str, Any]:
    """Ready no longer: Reconciling (StatefulSetMissing) while the StatefulSet of ``role`` is absent."""
    message = f"the StatefulSet of role {role} is missing; waiting for KubeDirector to create it"
    return status_patch(
        message=message,
        conditions=cond.mark_reconciling(_conds(status), STATEFULSET_MISSING, message, generation=generation, now=now),
    )


def is_statefulset_missing(status: Status) -> bool:
    return any(
        c.get("type") == cond.RECONCILING and c.get("status") == "True" and c.get("reason") == STATEFULSET_MISSING
        for c in RolloutStatus.from_obj(status).conditions
    )


def kubedirector_not_ready(status: Status, *, message: str, stalled: bool, generation: int, now: datetime) -> dict[str, Any]:
    """Ready no longer (or not yet) though the pods run the version: KubeDirector reports the cluster not ready
    (``message``, its words). KubeDirectorReady=False (its lastTransitionTime: since when), and Reconciling
    (WaitingForKubeDirector), or Stalled (KubeDirectorNotReady) when ``stalled``; the phase is kept."""
    kd = cond.Condition(KUBEDIRECTOR_READY_CONDITION, cond.FALSE, StallReason.KUBEDIRECTOR_NOT_READY, message, generation)
    conditions = cond.set_condition(_conds(status), kd, now)
    if stalled:
        conditions = cond.mark_stalled(conditions, StallReason.KUBEDIRECTOR_NOT_READY, message, generation=generation, now=now)
    else:
        conditions = cond.mark_reconciling(conditions, WAITING_FOR_KUBEDIRECTOR, message, generation=generation, now=now)
    return status_patch(message=message, conditions=conditions)


def is_kubedirector_marked(status: Status, message: str, stalled: bool) -> bool:
    """True when the status already says this: KubeDirectorReady=False and Ready=False, both with ``message``,
    Stalled or Reconciling as ``stalled`` says."""
    conditions = RolloutStatus.from_obj(status).conditions
    kd, ready = cond.get(conditions, KUBEDIRECTOR_READY_CONDITION), cond.get(conditions, cond.READY)
    return (
        kd is not None
        and kd.get("status") == cond.FALSE
        and kd.get("message") == message
        and ready is not None
        and ready.get("status") == cond.FALSE
        and ready.get("message") == message
        and cond.is_true(conditions, cond.STALLED) == stalled
    )
