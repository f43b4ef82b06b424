"""The registry of upgrade step kinds (planner halves), in the order a member runs them: migrate, hook, gate."""

from __future__ import annotations

from gitops_kd.plan.steps import gate, hook, migrate
from gitops_kd.plan.steps.kind import StepKind

STEP_KINDS: tuple[StepKind, ...] = (migrate, hook, gate)
