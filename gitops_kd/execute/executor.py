"""Executor: applies exactly one planned action, idempotently, and reports an Outcome."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient

from gitops_kd.execute import app_switch, apply, breakglass, failure, gate, labels, rollout, steps, workload
from gitops_kd.execute.context import ExecContext
from gitops_kd.execute.events import EventRecorder
from gitops_kd.execute.fence import Fence, FencedExec, FencedRest
from gitops_kd.execute.outcome import Outcome
from gitops_kd.plan import actions as A

log = logging.getLogger(__name__)

_HANDLERS: dict[type, Callable[[ExecContext, Any], Outcome]] = {
    A.ApplyApp: apply.apply_app,
    A.ApplyCluster: apply.apply_cluster,
    A.Prune: apply.prune,
    A.EnsureRollout: rollout.ensure_rollout,
    A.SetOnDelete: workload.set_on_delete,
    A.PatchTemplate: workload.patch_template,
    A.PatchServicePorts: workload.patch_service_ports,
    A.DeletePod: workload.delete_pod,
    A.RunStep: steps.run_step,
    A.StartGate: rollout.start_gate,
    A.CheckGate: gate.check_gate,
    A.FinishRollout: rollout.finish_rollout,
    A.MarkMissing: rollout.mark_missing,
    A.NoteStep: rollout.note_step,
    A.RecordInSync: rollout.record_in_sync,
    A.RecordStages: rollout.record_stages,
    A.RecordUnreachable: rollout.record_unreachable,
    A.Stall: rollout.stall,
    A.LiftStall: rollout.lift_stall,
    A.RestoreLabels: labels.restore_labels,
    A.ClearBreakGlass: breakglass.clear_break_glass,
    A.MarkUpgradable: app_switch.mark_upgradable,
    A.SwitchApp: app_switch.switch_app,
}


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Executor:
    """`Executor(api_client).execute(action) -> Outcome`. API errors propagate (the runtime retries)."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        now: Callable[[], datetime] = _utcnow,
        component: str = "gitops-kd",
        reverter: failure.Reverter | None = None,
    ) -> None:
        """`reverter(commit, reason) -> (sha, pushed)` pushes a revert for failurePolicy revert-commit (None: the
        policy halts instead)."""
        self.reverter = reverter
        self._rest = FencedRest(api_client)
        self._exec = FencedExec(api_client)
        self.events = EventRecorder(self._rest, now, component=component)
        self._ctx = ExecContext(rest=self._rest, events=self.events, pod_exec=self._exec, now=now)

    def set_fence(self, fence: Fence) -> None:
        """Check ``fence()`` right before each write and exec (execute.fence.NotLeading when it is down)."""
        self._rest.fence = self._exec.fence = fence

    def execute(self, action: A.Action) -> Outcome:
        """Apply one action; a Wait does nothing and asks to look again after its delay."""
        if isinstance(action, A.Wait):
            return Outcome(action.describe(), False, action.reason, requeue_after=action.requeue_after_seconds)
        if isinstance(action, A.HandleFailure):
            outcome = failure.handle_failure(self._ctx, action, self.reverter)
            log.warning("%s -> %s", action.describe(), outcome.message)
            return outcome
        handler = _HANDLERS.get(type(action))
        if handler is None:
            raise TypeError(f"Executor: no handler for action {type(action).__name__}")
        outcome = handler(self._ctx, action)
        log.log(
            logging.INFO if outcome.changed or outcome.failed else logging.DEBUG,
            "%s -> %s%s",
            action.describe(),
            "FAILED: " if outcome.failed else "",
            outcome.message,
        )
        return outcome

    def close(self) -> None:
        self._ctx.pod_exec.close()
