"""The migrate step kind (planner half): one RunStep per migrate rule of the pod's persisted dirs, once each."""

from __future__ import annotations

from typing import Any

from gitops_kd.kd import layout
from gitops_kd.observed import ObservedPod
from gitops_kd.plan.actions import MIGRATE_STEP, Action, RunStep
from gitops_kd.plan.podcontext import PodContext
from gitops_kd.render.template import dir_actions
from gitops_kd.rollout.model import PodProgress, Stage
from gitops_kd.spec.upgrade import MIGRATE
from gitops_kd.steps import migrate

STAGE = Stage.MIGRATING  # status.pods[pod].stage while this kind has work left for the pod
PROGRESS_FIELD = "migrations_done"  # its record: the PodProgress field (status.pods[pod])


def _steps(ctx: PodContext, pod: ObservedPod) -> list[RunStep]:
    rules = ctx.transition.rules
    if rules is None:
        return []
    steps: list[RunStep] = []
    dirs = ctx.app.role(pod.role).effective_persist_dirs
    for directory, action in dir_actions(dirs, rules):
        rule = rules.action_for(directory)
        if action == MIGRATE and rule.migrate is not None:
            step_id = f"{ctx.transition.target_version}/{pod.name}/{MIGRATE_STEP}{directory}"
            steps.append(
                RunStep(
                    ctx.namespace,
                    ctx.live.name,
                    pod.name,
                    layout.APP_CONTAINER,
                    step_id,
                    MIGRATE_STEP,
                    rule.migrate.command,
                    rule.migrate.timeout_seconds,
                    directory,
                )
            )
    return steps


def done(progress: PodProgress | None, step_id: str) -> bool:
    """Progress field: PodProgress.migrations_done lists the step ids run."""
    return progress is not None and step_id in progress.migrations_done


def recorded(progress: PodProgress | None, step_id: str) -> bool:
    """The executor's idempotence check: the same as done."""
    return done(progress, step_id)


def done_fields(progress: PodProgress | None, step_id: str) -> dict[str, Any]:
    """The status.pods[pod] fields that record the step as run (PodProgress names, for pod_patch)."""
    return {PROGRESS_FIELD: [*(progress.migrations_done if progress is not None else ()), step_id]}


def next_action(ctx: PodContext, pod: ObservedPod, progress: PodProgress | None) -> Action | None:
    return next((s for s in _steps(ctx, pod) if not done(progress, s.step_id)), None)


def sequence(ctx: PodContext, pod: ObservedPod) -> list[str]:
    return [migrate.describe(s.directory, s.command, s.timeout_seconds) for s in _steps(ctx, pod)]
