"""The postUpgrade hook step kind (planner half): one RunStep per upgraded member of the hook's roles."""

from __future__ import annotations

from typing import Any

from gitops_kd.kd import layout
from gitops_kd.observed import ObservedPod
from gitops_kd.plan.actions import HOOK_STEP, Action, RunStep
from gitops_kd.plan.podcontext import PodContext
from gitops_kd.rollout.model import PodProgress, Stage
from gitops_kd.steps import hook

STAGE = Stage.HOOK  # status.pods[pod].stage while this kind has work left for the pod
PROGRESS_FIELD = "hook_done"  # its record: the PodProgress field (status.pods[pod])


def done(progress: PodProgress | None) -> bool:
    """Progress field: PodProgress.hook_done."""
    return progress is not None and progress.hook_done


def recorded(progress: PodProgress | None, step_id: str) -> bool:
    """The executor's idempotence check: the same as done."""
    return done(progress)


def done_fields(progress: PodProgress | None, step_id: str) -> dict[str, Any]:
    """The status.pods[pod] fields that record the hook as run (PodProgress names, for pod_patch)."""
    return {PROGRESS_FIELD: True}


def next_action(ctx: PodContext, pod: ObservedPod, progress: PodProgress | None) -> Action | None:
    spec = ctx.transition.stanza.post_upgrade if ctx.transition.stanza is not None else None
    if spec is None or not spec.applies_to(pod.role) or done(progress):
        return None
    return RunStep(
        ctx.namespace,
        ctx.live.name,
        pod.name,
        layout.APP_CONTAINER,
        f"{ctx.transition.target_version}/{pod.name}/{HOOK_STEP}",
        HOOK_STEP,
        spec.command,
        spec.timeout_seconds,
    )


def sequence(ctx: PodContext, pod: ObservedPod) -> list[str]:
    spec = ctx.transition.stanza.post_upgrade if ctx.transition.stanza is not None else None
    return [hook.describe(spec)] if spec is not None and spec.applies_to(pod.role) else []
