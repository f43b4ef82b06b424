"""The post-plan stage seam: what runs on each plan after the pure planner (drift today), in order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from gitops_kd.observed import ObservedState
from gitops_kd.plan.result import Plan
from gitops_kd.spec.state import DesiredState

Planner = Callable[..., Plan]  # plan(desired, observed, *, now[, partial]) -> Plan: pure


class PlanStage(Protocol):
    """Takes the plan the planner made for ``desired`` against ``observed`` and returns the plan to act on.

    ``partial``: ``desired`` is one work key's part (plan/focus.py), not the whole fleet. A stage may keep state
    (drift baselines, open occurrences): the manager calls the planner and the stages of one plan at a time.
    A refused plan is passed through too (a stage returns it as it is unless it has a reason not to).
    """

    def __call__(self, desired: DesiredState, observed: ObservedState, plan: Plan, /, *, partial: bool) -> Plan: ...
