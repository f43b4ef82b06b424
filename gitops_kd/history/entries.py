"""History entries of one KDRollout: its finished attempts (status.history) plus the current one (pure).

status.history entries are written by the executor: ``{app, version, fromVersion, commit, startedAt,
finishedAt, result}`` (``app``: the KDApp of the version, which a native switch changes; entries written before it
was kept take the KDRollout's spec.app); ``result`` is Deployed (the first version, recorded when the cluster is first
Ready), Succeeded (FinishRollout), or — for an attempt closed when a new
target started (``closing_entry``) — Stalled, Reverted (gitops-kd pushed a revert of its commit) or
Superseded (a new commit changed the target while it was still rolling out). The attempt in progress
is not in status.history; ``entries_of`` adds it from the status (InProgress, Stalled or Reverted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitops_kd.constants import ACTIVE_PHASES
from gitops_kd.diff.model import DOWNGRADE, REBUILD, UPGRADE
from gitops_kd.rollout.model import RolloutStatus

SUCCEEDED, STALLED, REVERTED, SUPERSEDED, IN_PROGRESS = "Succeeded", "Stalled", "Reverted", "Superseded", "InProgress"
DEPLOYED = "Deployed"  # the first version gitops-kd recorded for the cluster (created by it, or adopted)


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


def _stalled_at(status: RolloutStatus) -> str | None:
    for cond in status.conditions:
        if cond.get("type") == "Stalled" and cond.get("status") == "True":
            found = cond.get("lastTransitionTime")
            return None if found is None else str(found)
    return None


def _revert_of(status: RolloutStatus, commit: str | None) -> str | None:
    failure = status.failure
    if commit and failure is not None and failure.commit == commit and failure.revert_commit:
        return failure.revert_commit
    return None


def attempt_of(status: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """The current attempt's target and commit, keyed as in the KDRollout's spec (targetVersion, commit):
    recorded in the status when it started (the spec's for a KDRollout written before the status carried them)."""
    st = RolloutStatus.from_obj(status)
    return {"targetVersion": st.target_version or spec.get("targetVersion"), "commit": st.commit or spec.get("commit")}


def closing_entry(status: Mapping[str, Any], spec: Mapping[str, Any], *, now: str) -> dict[str, Any] | None:
    """The status.history entry closing the current attempt when a rollout to another target starts, or
    None when there is no unfinished attempt (Idle, adoption). ``spec`` gives the attempt's targetVersion
    and commit (see attempt_of); ``now`` is the RFC 3339 time."""
    st = RolloutStatus.from_obj(status)
    if st.phase not in ACTIVE_PHASES or st.direction not in (UPGRADE, DOWNGRADE, REBUILD):
        return None
    commit = spec.get("commit")
    revert = _revert_of(st, commit)
    stalled = st.stalled
    result = REVERTED if revert else STALLED if stalled else SUPERSEDED
    entry = {
        **({"app": st.app} if st.app else {}),
        "version": spec.get("targetVersion"),
        "fromVersion": st.from_version,
        "commit": commit,
        "startedAt": st.started_at,
        "finishedAt": (_stalled_at(st) if stalled else None) or now,
        "result": result,
    }
    if st.commit_subject:
        entry["subject"] = st.commit_subject
    if revert:
        entry["revertCommit"] = revert
    if stalled and st.stalled_reason:
        entry["reason"] = str(st.stalled_reason)
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
            h.app or app,
            h.version,
            h.from_version,
            h.commit,
            h.started_at,
            h.finished_at,
            h.result or SUCCEEDED,
            h.revert_commit,
            h.reason,
            h.subject,
        )
        for h in RolloutStatus.from_obj(status).history
    ]
    current = closing_entry(status, attempt_of(status, spec), now="")
    if current is not None:
        result = current["result"] if current["result"] != SUPERSEDED else IN_PROGRESS
        out.append(
            HistoryEntry(
                ns,
                name,
                str(current.get("app") or app),
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


def ran_app(rollout: Mapping[str, Any], app: str) -> bool:
    """True when the KDRollout's cluster runs ``app`` now (spec.app) or ran it in an entry of its history: an app's
    history is that of every cluster that ran it, so it survives a switch of the cluster's spec.app (both names)."""
    return str((rollout.get("spec") or {}).get("app", "")) == app or any(e.app == app for e in entries_of(rollout))


def sort_key(entry: HistoryEntry) -> tuple[str, str, str]:
    """Newest-last order across clusters: by start time, then cluster."""
    return (entry.started or entry.finished or "", entry.namespace, entry.cluster)
