"""The executor's registry of RunStep kinds: kind -> its progress field (plan/steps) and its success Event."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gitops_kd.plan.actions import HOOK_STEP, MIGRATE_STEP
from gitops_kd.plan.steps import hook, migrate
from gitops_kd.rollout.model import PodProgress
from gitops_kd.status import events as ev


class Progress(Protocol):
    """A step kind's progress field in a pod's PodProgress (None: no entry yet)."""

    def recorded(self, progress: PodProgress | None, step_id: str) -> bool: ...

    def done_fields(self, progress: PodProgress | None, step_id: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class RunKind:
    """How the executor records one RunStep kind: its progress field and the Event reason of a success."""

    progress: Progress
    succeeded: str


RUN_KINDS: Mapping[str, RunKind] = {
    MIGRATE_STEP: RunKind(migrate, ev.MIGRATION_SUCCEEDED),
    HOOK_STEP: RunKind(hook, ev.HOOK_SUCCEEDED),
}
