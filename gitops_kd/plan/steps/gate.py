"""The gate step kind (planner half): start gating the member, probe it every period, stall after its timeout."""

from __future__ import annotations

from typing import Any

from gitops_kd.constants import StallReason
from gitops_kd.observed import ObservedPod
from gitops_kd.plan.actions import Action, CheckGate, Stall, StartGate, Wait
from gitops_kd.plan.podcontext import PodContext
from gitops_kd.rollout.model import PodProgress, Stage
from gitops_kd.steps import gate

STAGE = Stage.WAITING_GATE  # status.pods[pod].stage while this kind has work left for the pod
PROGRESS_FIELD = "gate_passed"  # its record: the PodProgress field (status.pods[pod])


def done(progress: PodProgress | None) -> bool:
    """Progress field: PodProgress.gate_passed."""
    return progress is not None and progress.gate_passed


def recorded(progress: PodProgress | None, step_id: str = "") -> bool:
    """The executor's idempotence check: the same as done."""
    return done(progress)


def done_fields(progress: PodProgress | None, step_id: str = "") -> dict[str, Any]:
    """The status.pods[pod] fields that record the gate as passed (PodProgress names, for pod_patch)."""
    return {PROGRESS_FIELD: True}


def next_action(ctx: PodContext, pod: ObservedPod, progress: PodProgress | None) -> Action | None:
    spec = ctx.transition.stanza.gate if ctx.transition.stanza is not None else None
    if spec is None or not spec.applies_to(pod.role) or done(progress):
        return None
    rollout = ctx.rollout
    if rollout is None or rollout.current_pod != pod.name or rollout.gate_started_at is None:
        return StartGate(ctx.namespace, ctx.live.name, pod.name)
    elapsed = (ctx.now - rollout.gate_started_at).total_seconds()
    if elapsed > spec.timeout_seconds:
        return Stall(
            ctx.namespace,
            ctx.live.name,
            StallReason.GATE_TIMEOUT,
            (
                f"the upgrade gate of pod {pod.name} has not passed {int(elapsed)}s after it started "
                f"(timeoutSeconds {spec.timeout_seconds})"
            ),
        )
    if rollout.gate_checked_at is not None:
        since = (ctx.now - rollout.gate_checked_at).total_seconds()
        if since < spec.period_seconds:
            return Wait(f"next gate check of pod {pod.name}", spec.period_seconds - since, ctx.key)
    return CheckGate(ctx.namespace, ctx.live.name, pod.name, pod.role, spec)


def sequence(ctx: PodContext, pod: ObservedPod) -> list[str]:
    spec = ctx.transition.stanza.gate if ctx.transition.stanza is not None else None
    return [gate.describe(spec, pod.name)] if spec is not None and spec.applies_to(pod.role) else []
