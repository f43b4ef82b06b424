"""HandleFailure: a Stalled rollout's failurePolicy — halt (record and report), or push a revert commit to Git."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from gitops_kd.execute.context import ExecContext, rv
from gitops_kd.execute.outcome import Outcome
from gitops_kd.observe.collector import Expectation
from gitops_kd.plan.actions import HandleFailure
from gitops_kd.status import events as ev
from gitops_kd.status.conditions import rfc3339

log = logging.getLogger(__name__)

Reverter = Callable[[str, str], str]
"""reverter(commit, reason) -> sha of the revert commit now on the followed branch; raises on failure."""


def handle_failure(ctx: ExecContext, a: HandleFailure, reverter: Reverter | None) -> Outcome:
    """Once per offending commit (status.failure.commit): record the failure, report it, maybe revert."""
    obj = ctx.rollout(a.namespace, a.cluster)
    if obj is None:
        return Outcome(a.describe(), False, "no KDRollout", failed=True, requeue_after=1.0)
    failure = (obj.get("status") or {}).get("failure") or {}
    if failure.get("commit") == a.commit:
        return Outcome(a.describe(), False, "failure already handled")
    record: dict[str, Any] = {"commit": a.commit, "reason": a.reason, "policy": a.policy, "message": a.message,
                              "handledAt": rfc3339(ctx.now()), "revertCommit": None, "note": a.note or None}
    what = f"{a.reason}: {a.message}".strip(": ")
    if a.revert and reverter is not None:
        try:
            sha = reverter(a.commit, f"gitops-kd: rollout of {a.app} {a.target_version} in "
                                     f"{a.namespace}/{a.cluster} failed ({what})")
        except Exception as exc:  # noqa: BLE001 - a failed revert falls back to halt, reported
            record["note"] = f"revert of {a.commit[:12]} failed, halted instead: {exc}"
            ctx.event_on_cluster(a.namespace, a.cluster, ev.REVERT_FAILED, f"{record['note']} ({what})", warning=True)
        else:
            record["revertCommit"] = sha
            ctx.event_on_cluster(a.namespace, a.cluster, ev.REVERT_PUSHED,
                                 f"pushed revert {sha[:12]} of commit {a.commit[:12]} to roll back to "
                                 f"{a.from_version or 'the previous version'} ({what})", warning=True)
    else:
        why = f"; {a.note}" if a.note else ""
        ctx.event_on_cluster(a.namespace, a.cluster, ev.UPGRADE_HALTED,
                             f"rollout halted by failurePolicy {a.policy} ({what}){why}. To roll back, revert "
                             f"commit {a.commit[:12]} (git revert {a.commit[:12]})", warning=True)
    written = ctx.patch_rollout_status(a.namespace, a.cluster, {"failure": record})
    log.warning("failure policy %s for %s/%s: %s", a.policy, a.namespace, a.cluster, record)
    return Outcome(a.describe(), True, record.get("note") or ("revert pushed" if record["revertCommit"] else "halted"),
                   expect=(Expectation("kdrollouts", a.namespace, a.cluster, rv(written)),))
