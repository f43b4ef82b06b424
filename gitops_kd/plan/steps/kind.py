"""What a step kind's planner half owns: the next action for a member, and its lines in the whole sequence."""

from __future__ import annotations

from typing import Protocol

from gitops_kd.observed import ObservedPod
from gitops_kd.plan.actions import Action
from gitops_kd.plan.podcontext import PodContext
from gitops_kd.rollout.model import PodProgress, Stage


class StepKind(Protocol):
    """A step kind's module under plan/steps/."""

    STAGE: Stage  # the stage a member is at while the kind has work left for it (status.pods[pod].stage)

    def next_action(self, ctx: PodContext, pod: ObservedPod, progress: PodProgress | None) -> Action | None:
        """The kind's next action for the upgraded ``pod`` (as if Ready), or None when it has nothing left."""
        ...

    def sequence(self, ctx: PodContext, pod: ObservedPod) -> list[str]:
        """The kind's lines in the reviewer's whole sequence for ``pod`` (values included)."""
        ...
