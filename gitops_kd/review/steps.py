"""The hook and gate of an upgrade stanza, described for a reviewer (pure)."""

from __future__ import annotations

from gitops_kd.review.model import Step
from gitops_kd.spec.upgrade import Gate, Hook
from gitops_kd.steps import hook as hook_kind


def hook_step(hook: Hook) -> Step:
    """The postUpgrade hook: its command, timeout and roles."""
    return Step(hook_kind.detail(hook), hook.timeout_seconds, hook.roles)


def gate_step(gate: Gate) -> Step:
    """The gate: its probe (any kind), polled every period until it passes or times out."""
    return Step(gate.probe.describe("<pod>"), gate.timeout_seconds, gate.roles, gate.period_seconds)
