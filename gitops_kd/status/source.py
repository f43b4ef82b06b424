"""The status of a GitOpsKDSource (one controller instance's Git source record) and its kstatus conditions (pure)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gitops_kd.constants import STALL_RECORD_UNTRUSTED, StallReason
from gitops_kd.observed import ObservedState
from gitops_kd.redact import redact_data
from gitops_kd.status.conditions import (
    FALSE,
    READY,
    RECONCILING,
    STALLED,
    Condition,
    delete,
    mark_ready,
    mark_reconciling,
    mark_stalled,
    set_condition,
)
from gitops_kd.status.events import COMMIT_REFUSED, GIT_UNREADABLE

KIND = "GitOpsKDSource"
PLURAL = "gitopskdsources"
# kstatus reasons
SUCCEEDED, PROGRESSING = "Succeeded", "Progressing"
ROLLOUT_STALLED = "RolloutStalled"  # Stalled: the applied commit's rollout stopped in a cluster (it needs a new commit)
SUSPENDED = "Suspended"  # Ready=False, neither Reconciling nor Stalled: a cluster is held by `gitops-kd suspend`
SHORT_SHA = 12
APPLY_REFUSED = StallReason.APPLY_REFUSED  # the source's Stalled reason while an object of its commit cannot be created
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # condition_series reads the conditions only, never their times

# status key of each SourceRecord field (the CRD's names)
_KEYS = {
    "url": "url",
    "branch": "branch",
    "applied": "lastAppliedRevision",
    "applied_subject": "lastAppliedSubject",
    "attempted": "lastAttemptedRevision",
    "refusal": "refusal",
    "apply_refused": "applyRefused",
    "baseline": "forcePushBaseline",
    "git_failures": "gitFailures",
    "git_error": "lastGitError",
    "recoveries": "cacheRecoveries",
    "handled": "lastHandledReconcileAt",
    "distrust": "recordProblem",
    "kubedirector": "kubeDirector",
}


@dataclass(frozen=True)
class SourceRecord:
    """What the cluster records of one instance's Git source; `in_sync` (not a status field) says whether the
    applied commit's plan was empty at the last reconcile (Ready) or still had actions (Reconciling)."""

    url: str = ""
    branch: str = ""
    applied: str = ""
    applied_subject: str = ""
    attempted: str = ""
    refusal: str = ""
    apply_refused: str = ""  # objects of the applied commit the API server refuses to create, "kind ns/name: why" lines
    baseline: str = ""
    git_failures: int = 0
    git_error: str = ""
    recoveries: int = 0
    handled: str = ""  # the last reconcile.gitops-kd.io/requestedAt value whose poll is done
    distrust: str = ""  # why the record found in the cluster is not trusted ("" when it is): nothing is planned
    kubedirector: str = ""  # which KubeDirector the API server's CRDs show, and what gitops-kd does on it
    in_sync: bool = False
    stalled: str = ""  # not a status field: the clusters whose rollout is Stalled, one line each (held_clusters)
    suspended: str = ""  # not a status field: the suspended clusters, "ns/name, ..." (held_clusters)

    @classmethod
    def from_status(cls, status: Mapping[str, Any] | None) -> SourceRecord:
        """The record a status holds (missing or mistyped fields read as empty)."""
        status = status or {}
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            key = _KEYS.get(field.name)
            if key is None:
                continue
            raw = status.get(key)
            if field.type == "int":
                values[field.name] = raw if isinstance(raw, int) and not isinstance(raw, bool) else 0
            else:
                values[field.name] = raw if isinstance(raw, str) else ""
        ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
        values["in_sync"] = bool(ready and ready.get("status") == "True")
        return cls(**values)

    def with_changes(self, **changes: Any) -> SourceRecord:
        return dataclasses.replace(self, **changes)


def held_clusters(observed: ObservedState) -> dict[str, str]:
    """The SourceRecord fields ``stalled`` and ``suspended`` as the KDRollouts of ``observed`` show them."""
    stalled, suspended = [], []
    for (ns, name), live in sorted(observed.clusters.items()):
        ro = live.rollout
        if ro is not None and ro.suspended:
            suspended.append(f"{ns}/{name}")
        elif ro is not None and ro.stalled:
            stalled.append(f"{ns}/{name} ({ro.stalled_reason or 'Stalled'}): {_first_line(ro.recorded.message or '')}")
    return {"stalled": "\n".join(stalled), "suspended": ", ".join(suspended)}


def git_unreadable(record: SourceRecord, not_ready_after: int) -> bool:
    """Git counts as unreadable: ``not_ready_after`` polls in a row failed, or one did and the repository was never
    read (no commit applied or attempted: nothing to go on, so the first failed poll says it)."""
    never_read = not record.applied and not record.attempted
    return record.git_failures >= not_ready_after or (record.git_failures > 0 and never_read)


def source_status(
    record: SourceRecord, previous: Mapping[str, Any] | None, *, generation: int | None, not_ready_after: int, now: datetime
) -> dict[str, Any]:
    """The status to write for `record`: its fields and Ready / Reconciling / Stalled conditions.

    Stalled (Ready=False) when the record found disagrees with Git or the cluster (RecordUntrusted), the
    repository could not be read (GitUnreadable: `not_ready_after` polls in a row, or the first poll of a
    repository never read), the newest commit was refused (CommitRefused) or the applied commit's rollout is Stalled
    in a cluster (RolloutStalled: the commit cannot be applied everywhere without a new one); while a cluster is
    suspended and the applied commit still has actions, Ready=False (Suspended) and neither Reconciling nor Stalled
    (nothing fails, nothing moves until `gitops-kd resume`); Reconciling while the applied commit still has actions
    to run or none was applied yet; else Ready=True with the applied revision."""
    status: dict[str, Any] = {key: getattr(record, name) for name, key in _KEYS.items()}
    status["observedGeneration"] = generation
    before = (previous or {}).get("conditions")
    revision = f"{record.branch}@sha1:{record.applied[:SHORT_SHA]}" if record.applied else ""
    if record.distrust:
        conditions = mark_stalled(before, STALL_RECORD_UNTRUSTED, _first_line(record.distrust), generation=generation, now=now)
    elif git_unreadable(record, not_ready_after):
        polls = f"{record.git_failures} polls in a row" if record.git_failures > 1 else "the first poll"
        message = f"{polls} could not read {record.url}: {_first_line(record.git_error)}"
        conditions = mark_stalled(before, GIT_UNREADABLE, message, generation=generation, now=now)
    elif record.refusal:
        message = f"commit {record.attempted[:SHORT_SHA]} refused: {_first_line(record.refusal)}"
        conditions = mark_stalled(before, COMMIT_REFUSED, message, generation=generation, now=now)
    elif record.apply_refused:
        message = f"{revision}: not applied whole: {_first_line(record.apply_refused)}"
        conditions = mark_stalled(before, APPLY_REFUSED, message, generation=generation, now=now)
    elif not record.applied:
        conditions = mark_reconciling(
            before, PROGRESSING, "waiting for the first accepted commit", generation=generation, now=now
        )
    elif record.stalled:
        lines = record.stalled.splitlines()
        message = f"{revision} is not applied everywhere: the rollout is Stalled in " + "; ".join(lines)
        conditions = mark_stalled(before, ROLLOUT_STALLED, message, generation=generation, now=now)
    elif not record.in_sync and record.suspended:
        message = f"{revision} is held in suspended cluster(s) {record.suspended} until `gitops-kd resume`"
        held = set_condition(before, Condition(READY, FALSE, SUSPENDED, message, generation), now)
        conditions = delete(delete(held, RECONCILING), STALLED)
    elif not record.in_sync:
        conditions = mark_reconciling(before, PROGRESSING, f"applying {revision}", generation=generation, now=now)
    else:
        conditions = mark_ready(before, SUCCEEDED, f"Applied revision: {revision}", generation=generation, now=now)
    status["conditions"] = conditions
    redacted: dict[str, Any] = redact_data(status)  # no credential of the URL or of a Git error is stored
    return redacted


def condition_series(record: SourceRecord, not_ready_after: int) -> tuple[tuple[str, str, str], ...]:
    """The source's conditions as (type, status, reason), exactly as ``source_status`` writes them (the metrics'
    gauge gitops_kd_source_condition)."""
    written = source_status(record, None, generation=None, not_ready_after=not_ready_after, now=_EPOCH)["conditions"]
    return tuple((str(c["type"]), str(c["status"]), str(c["reason"])) for c in written)


def _first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0] if lines else text
