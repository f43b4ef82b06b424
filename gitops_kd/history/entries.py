"""History entries of one KDRollout: its finished attempts (status.history) plus the current one (pure).

status.history entries are written by the executor: ``{version, fromVersion, commit, startedAt,
finishedAt, result}``; ``result`` is Deployed (the first version, recorded when the cluster is first
Ready), Succeeded (FinishRollout), or — for an attempt closed when a new
target started (``closing_entry``) — Stalled, Reverted (gitops-kd pushed a revert of its commit) or
Superseded (a new commit changed the target while it was still rolling out). The attempt in progress
is not in status.history; ``entries_of`` adds it from the status (InProgress, Stalled or Reverted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from gitops_kd.constants import ACTIVE_PHASES, Phase
from gitops_kd.diff.model import DOWNGRADE, REBUILD, UPGRADE
from gitops_kd.rollout.model import RolloutStatus

SUCCEEDED, STALLED, REVERTED, SUPERSEDED, IN_PROGRESS = "Succeeded", "Stalled", "Reverted", "Superseded", "InProgress"
DEPLOYED = "Deployed"  # the first version gitops-kd recorded for the cluster (created by it, or adopted)
SUBJECT = "commitSubject"  # status field: the subject line of the current attempt's commit (history entries: subject)


@dataclass(frozen=True)
class HistoryEntry:
    """One version applied (or being applied) to one cluster. Times are RFC 3339 text as stored."""

    namespace: str
    cluster: str
    app: str
    version: str
    from_version: str | None
    commit: str | None
    started: str | None
    finished: str | None
    result: str
    revert_commit: str | None = None
    reason: str | None = None
    subject: str | None = None  # the commit's subject line, as recorded when the attempt started

    def as_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "cluster": self.cluster,
            "app": self.app,
            "version": self.version,
            "fromVersion": self.from_version,
            "commit": self.commit,
            "startedAt": self.started,
            "finishedAt": self.finished,
            "result": self.result,
            "revertCommit": self.revert_commit,
            "reason": self.reason,
            "subject": self.subject,
        }


def _stalled_at(status: Mapping[str, Any]) -> str | None:
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Stalled" and cond.get("status") == "True":
            return cast(str | None, cond.get("lastTransitionTime"))
    return None


def _revert_of(status: Mapping[str, Any], commit: str | None) -> str | None:
    failure = status.get("failure") or {}
    if commit and failure.get("commit") == commit and failure.get("revertCommit"):
        return str(failure["revertCommit"])
    return None


def attempt_of(status: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """The current attempt's target and commit: recorded in the status when it started (the spec's for a
    KDRollout written before the status carried them)."""
    return {
        "targetVersion": status.get("targetVersion") or spec.get("targetVersion"),
        "commit": status.get("commit") or spec.get("commit"),
    }


def closing_entry(status: Mapping[str, Any], spec: Mapping[str, Any], *, now: str) -> dict[str, Any] | None:
    """The status.history entry closing the current attempt when a rollout to another target starts, or
    None when there is no unfinished attempt (Idle, adoption). ``spec`` gives the attempt's targetVersion
    and commit (see attempt_of); ``now`` is the RFC 3339 time."""
    if status.get("phase") not in ACTIVE_PHASES or status.get("direction") not in (UPGRADE, DOWNGRADE, REBUILD):
        return None
    commit = spec.get("commit")
    revert = _revert_of(status, commit)
    stalled = status.get("phase") == Phase.STALLED
    result = REVERTED if revert else STALLED if stalled else SUPERSEDED
    entry = {
        "version": spec.get("targetVersion"),
        "fromVersion": status.get("fromVersion"),
        "commit": commit,
        "startedAt": status.get("startedAt"),
        "finishedAt": (_stalled_at(status) if stalled else None) or now,
        "result": result,
    }
    if status.get(SUBJECT):
        entry["subject"] = status.get(SUBJECT)
    if revert:
        entry["revertCommit"] = revert
    reason = RolloutStatus.from_obj(status).stalled_reason
    if stalled and reason:
        entry["reason"] = str(reason)
    return entry


def entries_of(rollout: Mapping[str, Any]) -> list[HistoryEntry]:
    """Every entry of one KDRollout object, oldest first: status.history, then the attempt in progress."""
    meta = rollout.get("metadata") or {}
    spec = rollout.get("spec") or {}
    status = rollout.get("status") or {}
    ns, name, app = str(meta.get("namespace", "")), str(meta.get("name", "")), str(spec.get("app", ""))
    out = [
        HistoryEntry(
            ns,
            name,
            app,
            str(h.get("version", "")),
            h.get("fromVersion"),
            h.get("commit"),
            h.get("startedAt"),
            h.get("finishedAt"),
            str(h.get("result", SUCCEEDED)),
            h.get("revertCommit"),
            h.get("reason"),
            h.get("subject"),
        )
        for h in status.get("history") or ()
    ]
    current = closing_entry(status, attempt_of(status, spec), now="")
    if current is not None:
        result = current["result"] if current["result"] != SUPERSEDED else IN_PROGRESS
        out.append(
            HistoryEntry(
                ns,
                name,
                app,
                str(current["version"] or ""),
                current["fromVersion"],
                current["commit"],
                current["startedAt"],
                current["finishedAt"] or None,
                result,
                current.get("revertCommit"),
                current.get("reason"),
                current.get("subject"),
            )
        )
    return out


def sort_key(entry: HistoryEntry) -> tuple[str, str, str]:
    """Newest-last order across clusters: by start time, then cluster."""
    return (entry.started or entry.finished or "", entry.namespace, entry.cluster)
