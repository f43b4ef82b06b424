"""The hook and gate of an upgrade stanza, described for a reviewer (pure)."""

from __future__ import annotations

import shlex

from gitops_kd.review.model import Step
from gitops_kd.spec.upgrade import Gate, Hook


def hook_step(hook: Hook) -> Step:
    """The postUpgrade hook: its command, timeout and roles."""
    return Step(shlex.join(hook.command), hook.timeout_seconds, hook.roles)


def gate_step(gate: Gate) -> Step:
    """The gate: the exec command or the HTTP GET probe, polled every period until it passes or times out."""
    if gate.http_get is not None:
        probe = gate.http_get
        detail = f"HTTP GET {probe.scheme.lower()}://<pod>:{probe.port}{probe.path}"
    else:
        detail = shlex.join(gate.exec_command or ())
    return Step(detail, gate.timeout_seconds, gate.roles, gate.period_seconds)
