"""HandleFailure: a Stalled rollout's failurePolicy, once per offending commit — halt (record, report the commit
to revert), or revert-commit (push a revert of it through the Git source; the next poll rolls back)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from gitops_kd.constants import REQUEUE_NOT_CACHED, ROLLOUT_PLURAL
from gitops_kd.diff.rollback import Rollback
from gitops_kd.execute.context import ExecContext, generation, rv
from gitops_kd.execute.outcome import Outcome
from gitops_kd.observe.collector import Expectation
from gitops_kd.plan.actions import HandleFailure
from gitops_kd.rollout.model import RolloutStatus, status_patch
from gitops_kd.source.errors import SourceError
from gitops_kd.source.revert import RevertError
from gitops_kd.status import events as ev
from gitops_kd.status import rollout as rs
from gitops_kd.status.conditions import rfc3339

log = logging.getLogger(__name__)
RETRY_SECONDS = 30.0

Reverter = Callable[[str, str], tuple[str, bool]]
"""reverter(commit, reason) -> (sha of the revert on the branch, pushed now); raises RevertError (permanent:
conflict, commit not on the branch, signatures enforced) or SourceError (transient: remote unreachable)."""


def revert_message(a: HandleFailure) -> str:
    return (
        f"gitops-kd: the {a.app} {a.target_version} rollout of {a.namespace}/{a.cluster} failed ({a.reason}); "
        f"failurePolicy revert-commit goes back to {a.from_version}.\n\n{a.message}"
    )


def handle_failure(ctx: ExecContext, a: HandleFailure, reverter: Reverter | None) -> Outcome:
    """Record status.failure {commit, reason, policy, handledAt[, revertCommit][, note]}, extend the Stalled
    message with what to do, and report it in an Event; a transient Git error is retried later."""
    obj = ctx.rollout(a.namespace, a.cluster)
    if obj is None:
        return Outcome(a.describe(), False, "no KDRollout", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    handled = RolloutStatus.from_obj(obj.get("status")).failure
    if handled is not None and handled.commit == a.commit:
        return Outcome(a.describe(), False, "failure already handled")
    record: dict[str, Any] = {"commit": a.commit, "reason": a.reason, "policy": a.policy, "handledAt": rfc3339(ctx.now())}
    note = a.note
    if a.revert and reverter is None:
        note = "this controller cannot push to the Git source"
    if a.revert and reverter is not None:
        try:
            sha, pushed = reverter(a.commit, revert_message(a))
        except RevertError as exc:
            note = f"the revert could not be pushed: {exc.message}"
            ctx.event_on_cluster(a.namespace, a.cluster, ev.REVERT_FAILED, note, warning=True)
        except SourceError as exc:
            ctx.event_on_cluster(a.namespace, a.cluster, ev.REVERT_FAILED, f"will retry: {exc.message}", warning=True)
            return Outcome(a.describe(), False, exc.message, failed=True, requeue_after=RETRY_SECONDS)
        else:
            record["revertCommit"] = sha
            what = "pushed" if pushed else "found already on the branch"
            ctx.event_on_cluster(
                a.namespace,
                a.cluster,
                ev.REVERT_PUSHED,
                f"revert {sha} of commit {a.commit} {what} ({a.reason}); rolling back to {a.from_version}",
                warning=True,
            )
            return _write(
                ctx,
                a,
                obj,
                record,
                f"{a.message}; failurePolicy revert-commit: revert {sha[:12]} of "
                f"commit {a.commit[:12]} {what}, the next poll rolls back to "
                f"{a.from_version}",
            )
    if note:
        record["note"] = note
    record["rollback"] = {"possible": a.rollback_possible, "why": a.rollback_why}
    if not a.rollback_possible:
        advice = Rollback(False, a.rollback_why).advice(a.commit)
        ctx.event_on_cluster(
            a.namespace,
            a.cluster,
            ev.ROLLOUT_HALTED,
            f"rollout of {a.app} {a.target_version} halted ({a.reason}); {advice}",
            warning=True,
        )
        return _write(ctx, a, obj, record, f"{a.message}; failurePolicy {a.policy}: {advice}")
    ctx.event_on_cluster(
        a.namespace,
        a.cluster,
        ev.ROLLOUT_HALTED,
        f"rollout of {a.app} {a.target_version} halted ({a.reason}); revert commit {a.commit} to "
        f"roll back" + (f"; {note}" if note else ""),
        warning=True,
    )
    return _write(
        ctx,
        a,
        obj,
        record,
        f"{a.message}; failurePolicy {a.policy}: revert commit {a.commit[:12]} "
        f"(git revert {a.commit}) to roll back" + (f" ({note})" if note else ""),
    )


def _write(ctx: ExecContext, a: HandleFailure, obj: dict[str, Any], record: dict[str, Any], message: str) -> Outcome:
    patch = rs.stall(obj.get("status") or {}, reason=a.reason, message=message, generation=generation(obj), now=ctx.now())
    patch.update(status_patch(failure=record))
    written = ctx.patch_rollout_status(a.namespace, a.cluster, patch, rv=rv(obj))
    log.warning("failure policy %s for %s/%s: %s", a.policy, a.namespace, a.cluster, message)
    return Outcome(a.describe(), True, message, expect=(Expectation(ROLLOUT_PLURAL, a.namespace, a.cluster, rv(written)),))
