"""The failure policy of a Stalled rollout: halt, or revert the offending commit through Git (pure).

``halt`` (the default): the rollout stays Stalled where it is (the rest of the cluster keeps running);
the KDRollout, an Event and a metric name the commit to revert. ``revert-commit``: gitops-kd pushes a
revert of the commit itself, so the rollback too goes through Git; the next poll sees the revert and
the planner downgrades the cluster with the failed version's ``downgrade.to`` rules.

A revert is pushed only when it can succeed: an upgrade that failed on a pod (PodNotReady), a step
(StepFailed, StepTimedOut) or the gate (GateTimeout), whose stanza allows going back to the version
the cluster came from. Otherwise the policy falls back to halt and says why. Each offending commit is
handled once: the KDRollout's status.failure.commit records it.
"""

from __future__ import annotations

from gitops_kd.constants import Phase, StallReason
from gitops_kd.diff.model import UPGRADE, Transition
from gitops_kd.diff.rollback import rollback
from gitops_kd.observed import ObservedCluster
from gitops_kd.plan.actions import HandleFailure
from gitops_kd.spec.upgrade import HALT, REVERT_COMMIT

REVERTIBLE_REASONS = frozenset(
    {StallReason.POD_NOT_READY, StallReason.GATE_TIMEOUT, StallReason.STEP_FAILED, StallReason.STEP_TIMED_OUT}
)


def handled_commit(live: ObservedCluster) -> str | None:
    """The commit whose failure was already handled (status.failure.commit), or None."""
    if live.rollout is None:
        return None
    failure = live.rollout.recorded.failure
    return failure.commit if failure is not None else None


def failure_action(app_name: str, live: ObservedCluster, t: Transition) -> HandleFailure | None:
    """HandleFailure for a Stalled rollout not handled yet, or None."""
    ro = live.rollout
    if ro is None or not ro.stalled or not ro.commit or handled_commit(live) == ro.commit:
        return None
    stanza = t.stanza
    policy = stanza.failure_policy if stanza is not None else HALT
    reason = ro.stalled_reason or Phase.STALLED
    message = ro.recorded.message or ""
    revert, note = False, ""
    if policy == REVERT_COMMIT:
        revert, note = _revertible(ro.direction or t.direction, reason, t)
    possible, why = True, ""  # a failed downgrade or rebuild: its revert is judged when made
    if (ro.direction or t.direction) == UPGRADE:
        back = rollback(t.target_version, t.from_version, t.stanza)
        possible, why = back.possible, back.why
    return HandleFailure(
        live.namespace,
        live.name,
        app_name,
        ro.commit,
        policy,
        reason,
        message,
        t.target_version,
        t.from_version,
        revert,
        note,
        possible,
        why,
    )


def _revertible(direction: str, reason: str, t: Transition) -> tuple[bool, str]:
    if direction != UPGRADE:
        return False, f"a failed {direction} is not reverted automatically (it may itself be a revert)"
    if reason not in REVERTIBLE_REASONS:
        return False, f"{reason} needs an operator (only {', '.join(sorted(REVERTIBLE_REASONS))} are reverted)"
    if not t.from_version:
        return False, "the version the cluster came from is unknown"
    if t.stanza is None or t.stanza.rule_for_downgrade_to(t.from_version) is None:
        return False, (
            f"version {t.target_version} allows no downgrade to {t.from_version} (upgrade.downgrade.to), "
            f"so a revert would be refused"
        )
    return True, ""


__all__ = ["REVERTIBLE_REASONS", "failure_action", "handled_commit"]
