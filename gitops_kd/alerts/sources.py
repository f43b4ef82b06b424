"""Alert sources: drift reports, stalled KDRollouts, refused commits and Git health turned into fire / resolve."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gitops_kd.alerts.hub import AlertHub
from gitops_kd.alerts.model import CRITICAL, DRIFT, GIT_HEALTH, REFUSED_COMMIT, STALL, WARNING, Alert, Subject
from gitops_kd.drift.alert import RESOLVED, detected_message, payload, resolved_message
from gitops_kd.drift.classify import DriftReport
from gitops_kd.drift.policy import REVERT
from gitops_kd.drift.tracker import Occurrence
from gitops_kd.kd.layout import KDCLUSTER_KIND
from gitops_kd.observed import ObservedState
from gitops_kd.spec.state import Key
from gitops_kd.status.source import git_unreadable


def _drift_alert(occ: Occurrence, message: str, body: dict[str, Any]) -> Alert:
    d = occ.drift
    labels = {"cluster": d.cluster} if d.cluster else {}
    return Alert(DRIFT, WARNING, Subject(d.kind, d.namespace, d.name), message, labels, starts_at=occ.detected_at, details=body)


def drift(hub: AlertHub, report: DriftReport) -> None:
    """One alert per new drift occurrence (a further edit of an object still drifted fires again), a resolve
    when the object is back in line with Git."""
    for occ in report.new:
        action = report.policy.action(occ.drift)
        hub.fire(_drift_alert(occ, detected_message(occ.drift, action), payload(occ, action)), renew=True)
    for occ in report.resolved:
        reverted = report.policy.mode(occ.drift) == REVERT
        body = payload(occ, "reverted" if reverted else "alert-only", RESOLVED)
        hub.resolve(_drift_alert(occ, resolved_message(occ.drift, reverted), body))


def _stall_alert(key: Key, reason: str, message: str) -> Alert:
    return Alert(STALL, CRITICAL, Subject(KDCLUSTER_KIND, *key), message, {"reason": reason})


def stalls(hub: AlertHub, observed: ObservedState, keys: Iterable[Key]) -> None:
    """For each cluster of ``keys``: fire when its KDRollout is Stalled (once per stall reason), resolve the
    stall alerts of a rollout no longer stalled (or stalled for another reason)."""
    looked = set(keys)
    now: dict[str, Alert] = {}
    for key in looked:
        live = observed.clusters.get(key)
        ro = live.rollout if live is not None else None
        if ro is not None and ro.stalled:
            reason = ro.stalled_reason or "Stalled"
            alert = _stall_alert(key, reason, f"KDRollout {key[0]}/{key[1]} stalled ({reason}); its status.conditions say why")
            now[alert.fingerprint] = alert
    for open_ in hub.open_of(STALL):
        key = (open_.subject.namespace, open_.subject.name)
        if key in looked and open_.fingerprint not in now:
            hub.resolve(open_, f"KDRollout {key[0]}/{key[1]} no longer stalled ({open_.labels.get('reason')})")
    for alert in now.values():
        hub.fire(alert)


class RecordAlerts:
    """A listener of the instance record (GitOpsKDSource): Git unreadable and refused commits, fired on the
    transition in and resolved on the transition out."""

    def __init__(self, hub: AlertHub, *, kind: str, namespace: str, name: str, not_ready_after: int) -> None:
        self.hub = hub
        self.subject = Subject(kind, namespace, name)
        self.not_ready_after = not_ready_after

    def __call__(self, before: Any, after: Any) -> None:
        if not git_unreadable(before, self.not_ready_after) and git_unreadable(after, self.not_ready_after):
            self.hub.fire(
                Alert(
                    GIT_HEALTH,
                    CRITICAL,
                    self.subject,
                    f"{after.git_failures} polls in a row could not read {after.url}: "
                    f"{(after.git_error or '').splitlines()[0] if after.git_error else ''}",
                )
            )
        elif after.git_failures == 0 and before.git_failures > 0:
            for a in self.hub.open_of(GIT_HEALTH):
                self.hub.resolve(a, f"Git repository {after.url} readable again")
        if after.refusal and (after.refusal, after.attempted) != (before.refusal, before.attempted):
            for a in self.hub.open_of(REFUSED_COMMIT):
                self.hub.resolve(a, f"commit {a.labels.get('commit')} superseded by {after.attempted[:12]}")
            self.hub.fire(
                Alert(
                    REFUSED_COMMIT,
                    WARNING,
                    self.subject,
                    f"commit {after.attempted[:12]} refused, nothing applied: {after.refusal.splitlines()[0]}",
                    {"commit": after.attempted[:12]},
                )
            )
        elif not after.refusal and before.refusal:
            for a in self.hub.open_of(REFUSED_COMMIT):
                self.hub.resolve(a, f"commit {after.applied[:12]} applied; the refused commit is no longer the newest")
