"""The KDRollout status as frozen records: `RolloutStatus.from_obj(status)` reads it, `to_patch()` writes it (pure).

It lives in a pure package of its own, not in gitops_kd/status/ (an edge the core may not import,
.importlinter core-is-pure): the planner and the observed-state model read these types, and the executor,
UI, CLI and health read the same ones. Reading is tolerant: an object written by an earlier gitops-kd lacks
fields (they get their defaults: no ``stage`` for a pod, for one) and a value outside an enum is kept as text;
keys this version does not know are kept in ``extra`` and written back by ``to_patch`` (a newer CRD's fields
survive an older writer; the API server prunes what its schema does not list anyway).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from gitops_kd.constants import APPLY_FAILURE_FIELD, ROLLOUT_IMAGES_FIELD, TARGET_STANZA_FIELD, Phase, StallReason

PODS_FIELD = "pods"  # status.pods: pod name -> its progress record
STAGE_FIELD = "stage"  # status.pods[pod].stage: where the pod is in the rollout (the planner's Stage)
UNREACHABLE_FIELD = "unreachable"  # status.unreachable: members whose Service targets ports their pod does not serve


class Stage(StrEnum):
    """Where one member pod is in the current attempt, as plan/pods.py decides it (status.pods[pod].stage)."""

    PENDING = "pending"  # runs the old template; not replaced yet
    REPLACING = "replacing"  # deleted, being recreated, or recreated and not Ready yet
    MIGRATING = "migrating"  # Ready at the new revision; a data migration has not run
    HOOK = "hook"  # the post-upgrade hook has not run
    WAITING_GATE = "waiting-gate"  # the upgrade gate has not passed
    DONE = "done"  # at the target, Ready, its steps done


E = TypeVar("E", bound=StrEnum)


def _enum(kind: type[E], value: Any) -> E | str | None:
    """``value`` as a member of ``kind``; text outside it kept as text (a newer writer's value); None when unset."""
    if value is None or value == "":
        return None
    try:
        return kind(value)
    except ValueError:
        return str(value)


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _int(value: Any) -> int | None:
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _extra(obj: Mapping[str, Any], known: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in known}


def _drop_none(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


# PodProgress attribute -> its key in status.pods[pod]
_POD_KEYS: Mapping[str, str] = {
    "revision": "revision",
    "stage": STAGE_FIELD,
    "hook_done": "hookDone",
    "migrations_done": "migrationsDone",
    "gate_passed": "gatePassed",
    "ready_since": "readySince",
    "exec_failures": "execFailures",
    "output": "output",
    "step": "step",
    "step_progress": "stepProgress",
}


@dataclass(frozen=True)
class PodProgress:
    """status.pods[<pod>]: what the current attempt did for one member pod.

    ``revision``: the StatefulSet revision the pod was at when written (an entry of another revision is not this
    attempt's work); ``stage``: the planner's Stage; ``migrations_done``: step ids ``<target>/<pod>/migrate<dir>``.
    ``step`` / ``step_progress``: the step kind at work and its own fields, for the step registry (plan/steps) to
    fill; the fixed fields below are the ones the CRD lists today.
    """

    revision: str = ""
    stage: Stage | str | None = None
    hook_done: bool = False
    migrations_done: tuple[str, ...] = ()
    gate_passed: bool = False
    ready_since: str | None = None
    exec_failures: int = 0
    output: str | None = None
    step: str | None = None
    step_progress: Mapping[str, Any] = field(default_factory=dict, hash=False)
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    KEYS = frozenset(_POD_KEYS.values())

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any] | None) -> PodProgress:
        obj = _map(obj)
        return cls(
            revision=str(obj.get("revision") or ""),
            stage=_enum(Stage, obj.get(STAGE_FIELD)),
            hook_done=bool(obj.get("hookDone")),
            migrations_done=tuple(str(s) for s in obj.get("migrationsDone") or ()),
            gate_passed=bool(obj.get("gatePassed")),
            ready_since=_text(obj.get("readySince")),
            exec_failures=_int(obj.get("execFailures")) or 0,
            output=None if obj.get("output") is None else str(obj.get("output")),
            step=_text(obj.get("step")),
            step_progress=dict(_map(obj.get("stepProgress"))),
            extra=_extra(obj, cls.KEYS),
        )

    def to_obj(self) -> dict[str, Any]:
        """The entry as stored (unset fields left out)."""
        return {
            **self.extra,
            **_drop_none(
                {
                    "revision": self.revision or None,
                    STAGE_FIELD: str(self.stage) if self.stage else None,
                    "hookDone": self.hook_done or None,
                    "migrationsDone": list(self.migrations_done) or None,
                    "gatePassed": self.gate_passed or None,
                    "readySince": self.ready_since,
                    "execFailures": self.exec_failures or None,
                    "output": self.output,
                    "step": self.step,
                    "stepProgress": dict(self.step_progress) or None,
                }
            ),
        }


@dataclass(frozen=True)
class Unreachable:
    """status.unreachable[]: a member whose own Service targets other ports than its running pod listens on
    (rollout/reach.py), so a client of that Service reaches nothing. ``service_ports``: where each Service port
    sends traffic (0: a port name the pod does not declare); ``pod_ports``: what the pod's app container declares."""

    pod: str
    service: str
    service_ports: tuple[int, ...]
    pod_ports: tuple[int, ...]

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> Unreachable:
        return cls(
            pod=str(obj.get("pod") or ""),
            service=str(obj.get("service") or ""),
            service_ports=tuple(_int(p) or 0 for p in obj.get("servicePorts") or ()),
            pod_ports=tuple(_int(p) or 0 for p in obj.get("podPorts") or ()),
        )

    def to_obj(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "service": self.service,
            "servicePorts": list(self.service_ports),
            "podPorts": list(self.pod_ports),
        }

    def describe(self) -> str:
        said = ", ".join(str(p) if p else "(unknown name)" for p in self.service_ports) or "nothing"
        return (
            f"{self.pod}: Service {self.service} targets port(s) {said} but the pod listens on "
            f"{', '.join(str(p) for p in self.pod_ports)}"
        )


@dataclass(frozen=True)
class ApplyFailure:
    """status.applyFailure: the last KDApp / KDCluster write that failed, and the phase before its stall."""

    kind: str = ""
    namespace: str = ""
    name: str = ""
    digest: str = ""
    failures: int = 0
    code: int | None = None
    message: str = ""
    phase: Phase | str | None = None

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> ApplyFailure:
        return cls(
            kind=str(obj.get("kind") or ""),
            namespace=str(obj.get("namespace") or ""),
            name=str(obj.get("name") or ""),
            digest=str(obj.get("digest") or ""),
            failures=_int(obj.get("failures")) or 0,
            code=_int(obj.get("code")),
            message=str(obj.get("message") or ""),
            phase=_enum(Phase, obj.get("phase")),
        )

    def to_obj(self) -> dict[str, Any]:
        return _drop_none(
            {
                "kind": self.kind,
                "namespace": self.namespace,
                "name": self.name,
                "digest": self.digest,
                "failures": self.failures,
                "code": self.code,
                "message": self.message,
                "phase": str(self.phase) if self.phase else None,
            }
        )


@dataclass(frozen=True)
class Failure:
    """status.failure: the stalled commit the failure policy handled (plan/failure.py), once per commit."""

    commit: str | None = None
    reason: StallReason | str | None = None
    message: str | None = None
    policy: str | None = None
    handled_at: str | None = None
    revert_commit: str | None = None
    note: str | None = None
    rollback: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> Failure:
        return cls(
            commit=_text(obj.get("commit")),
            reason=_enum(StallReason, obj.get("reason")),
            message=_text(obj.get("message")),
            policy=_text(obj.get("policy")),
            handled_at=_text(obj.get("handledAt")),
            revert_commit=_text(obj.get("revertCommit")),
            note=_text(obj.get("note")),
            rollback=dict(_map(obj.get("rollback"))),
        )

    def to_obj(self) -> dict[str, Any]:
        return _drop_none(
            {
                "commit": self.commit,
                "reason": str(self.reason) if self.reason else None,
                "message": self.message,
                "policy": self.policy,
                "handledAt": self.handled_at,
                "revertCommit": self.revert_commit,
                "note": self.note,
                "rollback": dict(self.rollback) or None,
            }
        )


@dataclass(frozen=True)
class HistoryRecord:
    """One entry of status.history (newest last): a version applied, how it ended and when."""

    version: str = ""
    result: str = ""
    from_version: str | None = None
    commit: str | None = None
    subject: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    revert_commit: str | None = None
    reason: str | None = None

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> HistoryRecord:
        return cls(
            version=str(obj.get("version") or ""),
            result=str(obj.get("result") or ""),
            from_version=_text(obj.get("fromVersion")),
            commit=_text(obj.get("commit")),
            subject=_text(obj.get("subject")),
            started_at=_text(obj.get("startedAt")),
            finished_at=_text(obj.get("finishedAt")),
            revert_commit=_text(obj.get("revertCommit")),
            reason=_text(obj.get("reason")),
        )

    def to_obj(self) -> dict[str, Any]:
        return _drop_none(
            {
                "version": self.version,
                "fromVersion": self.from_version,
                "commit": self.commit,
                "subject": self.subject,
                "startedAt": self.started_at,
                "finishedAt": self.finished_at,
                "result": self.result,
                "revertCommit": self.revert_commit,
                "reason": self.reason,
            }
        )


def stored_history(status: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """status.history's entries as stored (each entry's keys, their order and keys this version does not know
    kept), for a transition that appends to the history and writes it back byte for byte."""
    return [dict(h) for h in _map(status).get("history") or () if isinstance(h, Mapping)]


# camelCase status key -> RolloutStatus attribute, for the plain (text / number) fields
_PLAIN = {
    "observedGeneration": "observed_generation",
    "appVersion": "app_version",
    "fromVersion": "from_version",
    "targetVersion": "target_version",
    "attempt": "attempt",
    "commit": "commit",
    "commitSubject": "commit_subject",
    "fromStanza": "from_stanza",
    TARGET_STANZA_FIELD: "target_stanza",
    "currentRole": "current_role",
    "currentPod": "current_pod",
    "direction": "direction",
    "step": "step",
    "message": "message",
    "startedAt": "started_at",
    "gateStartedAt": "gate_started_at",
    "gateCheckedAt": "gate_checked_at",
    "syncedDigest": "synced_digest",
    "syncedCommit": "synced_commit",
}
# RolloutStatus attribute -> status key, for every field (the typed ones hold records or enums)
_STATUS_KEYS: Mapping[str, str] = {
    **{attr: key for key, attr in _PLAIN.items()},
    "phase": "phase",
    "stalled_reason": "stalledReason",
    "images": ROLLOUT_IMAGES_FIELD,
    "pods": PODS_FIELD,
    "conditions": "conditions",
    "apply_failure": APPLY_FAILURE_FIELD,
    "failure": "failure",
    "history": "history",
    "unreachable": UNREACHABLE_FIELD,
}
_TYPED = frozenset(_STATUS_KEYS.values()) - frozenset(_PLAIN)


def _keyed(keys: Mapping[str, str], kind: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(fields) - set(keys))
    if unknown:
        raise TypeError(f"{kind} has no field {', '.join(unknown)} (fields: {', '.join(keys)})")
    return {keys[attr]: value for attr, value in fields.items()}


def status_key(field: str) -> str:
    """The status key of the RolloutStatus field ``field`` (for a message naming status.<key>)."""
    return _keyed(_STATUS_KEYS, "RolloutStatus", {field: None}).popitem()[0]


def status_patch(**fields: Any) -> dict[str, Any]:
    """A merge patch of a KDRollout's status setting the named RolloutStatus fields, in the order given, to the
    values given as stored (None deletes the key; ``pods`` / ``images`` values are merge patches of their maps).
    The writers build their one patch per transition with it, so the status keys are spelled only here."""
    return _keyed(_STATUS_KEYS, "RolloutStatus", fields)


def pod_patch(pod: str, **fields: Any) -> dict[str, Any]:
    """A merge patch of status.pods[pod] setting the named PodProgress fields (values as stored, None deletes)."""
    return {PODS_FIELD: {pod: _keyed(_POD_KEYS, "PodProgress", fields)}}


@dataclass(frozen=True)
class RolloutStatus:
    """A KDRollout's status: the current attempt (written whole when it starts), its progress per pod, the
    conditions, the failure records and the history. Times are RFC 3339 text as stored."""

    phase: Phase | str | None = None
    observed_generation: int | None = None
    app_version: str | None = None
    from_version: str | None = None
    target_version: str | None = None
    attempt: str | None = None
    commit: str | None = None
    commit_subject: str | None = None
    from_stanza: str | None = None
    target_stanza: str | None = None
    current_role: str | None = None
    current_pod: str | None = None
    direction: str | None = None
    stalled_reason: StallReason | str | None = None
    step: str | None = None
    message: str | None = None
    started_at: str | None = None
    gate_started_at: str | None = None
    gate_checked_at: str | None = None
    synced_digest: str | None = None
    synced_commit: str | None = None
    images: Mapping[str, str] = field(default_factory=dict, hash=False)
    pods: Mapping[str, PodProgress] = field(default_factory=dict, hash=False)
    conditions: tuple[Mapping[str, Any], ...] = ()
    apply_failure: ApplyFailure | None = None
    failure: Failure | None = None
    history: tuple[HistoryRecord, ...] = ()
    unreachable: tuple[Unreachable, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @classmethod
    def from_obj(cls, status: Mapping[str, Any] | None) -> RolloutStatus:
        """The status of a KDRollout object (``obj["status"]``; None or {} for one never written)."""
        status = _map(status)
        plain: dict[str, Any] = {attr: _text(status.get(key)) for key, attr in _PLAIN.items()}
        plain["observed_generation"] = _int(status.get("observedGeneration"))
        apply_failure, failure = _map(status.get(APPLY_FAILURE_FIELD)), _map(status.get("failure"))
        return cls(
            **plain,
            phase=_enum(Phase, status.get("phase")),
            stalled_reason=_enum(StallReason, status.get("stalledReason")),
            images={str(k): str(v) for k, v in _map(status.get(ROLLOUT_IMAGES_FIELD)).items() if v},
            pods={str(k): PodProgress.from_obj(v) for k, v in _map(status.get(PODS_FIELD)).items() if v},
            conditions=tuple(dict(c) for c in status.get("conditions") or () if isinstance(c, Mapping)),
            apply_failure=ApplyFailure.from_obj(apply_failure) if apply_failure else None,
            failure=Failure.from_obj(failure) if failure else None,
            history=tuple(HistoryRecord.from_obj(h) for h in status.get("history") or () if isinstance(h, Mapping)),
            unreachable=tuple(Unreachable.from_obj(u) for u in status.get(UNREACHABLE_FIELD) or () if isinstance(u, Mapping)),
            extra=_extra(status, frozenset(_PLAIN) | _TYPED),
        )

    def to_obj(self) -> dict[str, Any]:
        """The status as stored (unset fields left out): ``from_obj(s.to_obj()) == s``."""
        return _drop_none(self._body())

    def to_patch(self, previous: RolloutStatus | None = None) -> dict[str, Any]:
        """A JSON merge patch for the status subresource making the stored status this one: every field this
        record leaves unset is deleted (None), and so is each pod / image entry ``previous`` holds and this
        one does not."""
        body = self._body()
        if previous is not None:
            for key, mine, theirs in (
                (PODS_FIELD, self.pods, previous.pods),
                (ROLLOUT_IMAGES_FIELD, self.images, previous.images),
            ):
                gone = {name: None for name in theirs if name not in mine}
                if gone:
                    body[key] = {**gone, **(body[key] or {})}
            body.update({k: None for k in previous.extra if k not in self.extra})
        return body

    def _body(self) -> dict[str, Any]:
        body: dict[str, Any] = {key: getattr(self, attr) for key, attr in _PLAIN.items()}
        body.update(
            {
                "phase": str(self.phase) if self.phase else None,
                "stalledReason": str(self.stalled_reason) if self.stalled_reason else None,
                ROLLOUT_IMAGES_FIELD: dict(self.images) or None,
                PODS_FIELD: {name: p.to_obj() for name, p in self.pods.items()} or None,
                "conditions": [dict(c) for c in self.conditions] or None,
                APPLY_FAILURE_FIELD: self.apply_failure.to_obj() if self.apply_failure else None,
                "failure": self.failure.to_obj() if self.failure else None,
                "history": [h.to_obj() for h in self.history] or None,
                UNREACHABLE_FIELD: [u.to_obj() for u in self.unreachable] or None,
            }
        )
        return {**self.extra, **body}

    @property
    def stalled(self) -> bool:
        return self.phase == Phase.STALLED

    def progress(self, pod: str) -> PodProgress | None:
        """The progress entry of ``pod``, or None."""
        return self.pods.get(pod)

    def stage(self, pod: str) -> Stage | str | None:
        """The stage the planner recorded for ``pod`` (None: not recorded, e.g. a status of an earlier version)."""
        entry = self.pods.get(pod)
        return entry.stage if entry is not None else None


__all__ = [
    "PODS_FIELD",
    "STAGE_FIELD",
    "UNREACHABLE_FIELD",
    "ApplyFailure",
    "Failure",
    "HistoryRecord",
    "PodProgress",
    "RolloutStatus",
    "Stage",
    "Unreachable",
    "pod_patch",
    "status_key",
    "status_patch",
    "stored_history",
]
