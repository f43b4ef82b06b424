"""What each planned action changes, with the live and the Git value, for `gitops-kd plan` (pure)."""

from __future__ import annotations

import shlex
from collections.abc import Iterator

from gitops_kd.observed import ObservedState
from gitops_kd.plan.actions import Action, CheckGate, RunStep
from gitops_kd.plan.result import Plan
from gitops_kd.review.livediff import action_diff
from gitops_kd.review.steps import gate_step

PLAN_VALUE = 120  # characters of one value in `plan` (one line per field; `diff` shows more)


def action_values(action: Action, observed: ObservedState) -> Iterator[str]:
    """One line per field `action` changes, `path: live -> git` (values cut to PLAN_VALUE characters), or what
    it runs: a step's command and timeout, a gate's probe. Nothing for a create (the whole object is new) or for
    actions that only record, delete a pod or wait."""
    found = action_diff(action, observed)
    if found is not None:
        yield from (f.describe(PLAN_VALUE) for f in found.fields)
    elif isinstance(action, RunStep):
        yield f"command: {shlex.join(action.command)} (timeout {action.timeout_seconds}s)"
    elif isinstance(action, CheckGate):
        probe = gate_step(action.gate)
        yield f"probe: {probe.detail.replace('<pod>', action.pod)} (every {probe.period_seconds}s)"


def plan_text(plan: Plan, observed: ObservedState) -> str:
    """`plan.describe()` with each action's values under it."""
    return plan.describe(lambda a: action_values(a, observed))
