"""RunStep: a migration or postUpgrade hook run in a member over exec, at most once (marker dirs in the pod)."""

from __future__ import annotations

import logging
import re
from typing import Any

from gitops_kd.execute.context import ExecContext, rv
from gitops_kd.execute.outcome import Outcome
from gitops_kd.execute.podexec import ExecResult
from gitops_kd.observe.collector import Expectation
from gitops_kd.plan.actions import HOOK_STEP, RunStep
from gitops_kd.status import events as ev
from gitops_kd.status import rollout as rs
from gitops_kd.constants import REQUEUE_NOT_CACHED, REQUEUE_STEP_FAILED, ROLLOUT_PLURAL

log = logging.getLogger(__name__)

STEPS_DIR = "/var/lib/gitops-kd/steps"
ALREADY_DONE, INTERRUPTED = 96, 97

# $1 = marker path (without suffix); the step's argv follows. mkdir is atomic: a second run of a step
# that started (and maybe died half way) fails here instead of running the command again.
WRAPPER = (
    'm="$1"; shift; '
    f'if [ -e "$m.done" ]; then echo "gitops-kd: step already done"; exit {ALREADY_DONE}; fi; '
    'mkdir -p "$(dirname "$m")" || exit 98; '
    f'if ! mkdir "$m.started" 2>/dev/null; then echo "gitops-kd: step started before and did not finish" >&2; '
    f'exit {INTERRUPTED}; fi; '
    '"$@"; rc=$?; '
    'if [ "$rc" -eq 0 ]; then touch "$m.done" || exit 98; fi; '
    'exit "$rc"'
)


def marker_path(rollout_uid: str, step_id: str) -> str:
    """/var/lib/gitops-kd/steps/<rollout-uid>-<step id with / and odd characters as _>."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", step_id).strip("_")
    return f"{STEPS_DIR}/{rollout_uid}-{safe}"


def wrapped_command(rollout_uid: str, step_id: str, command: tuple[str, ...]) -> list[str]:
    return ["/bin/sh", "-c", WRAPPER, "gitops-kd-step", marker_path(rollout_uid, step_id), *command]


def _recorded(status: dict[str, Any], a: RunStep) -> bool:
    progress = (status.get("pods") or {}).get(a.pod) or {}
    if a.kind == HOOK_STEP:
        return bool(progress.get("hookDone"))
    return a.step_id in (progress.get("migrationsDone") or ())


def _progress_patch(status: dict[str, Any], a: RunStep, revision: str, output: str) -> dict[str, Any]:
    progress = (status.get("pods") or {}).get(a.pod) or {}
    fields: dict[str, Any] = {"revision": revision, "output": output}
    if a.kind == HOOK_STEP:
        fields["hookDone"] = True
    else:
        fields["migrationsDone"] = [*(progress.get("migrationsDone") or ()), a.step_id]
    patch = rs.pod_progress(a.pod, **fields)
    patch["step"] = f"{a.kind} done in {a.pod}"
    return patch


def run_step(ctx: ExecContext, a: RunStep) -> Outcome:
    obj = ctx.rollout(a.namespace, a.cluster)
    if obj is None:
        return Outcome(a.describe(), False, "no KDRollout", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    status = obj.get("status") or {}
    if _recorded(status, a):
        return Outcome(a.describe(), False, "step already recorded as done")
    pod = ctx.rest.get_or_none("v1", "pods", a.namespace, a.pod)
    if pod is None:
        return Outcome(a.describe(), False, f"pod {a.pod} not found", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    revision = ((pod.get("metadata") or {}).get("labels") or {}).get("controller-revision-hash", "")
    marker = marker_path((obj.get("metadata") or {}).get("uid", "rollout"), a.step_id)
    result = ctx.pod_exec.run(a.namespace, a.pod, a.container,
                              wrapped_command((obj.get("metadata") or {}).get("uid", "rollout"), a.step_id, a.command),
                              timeout=float(a.timeout_seconds))
    log.info("step %s in %s/%s: exit %s\n%s", a.step_id, a.namespace, a.pod, result.exit_code, result.tail())
    if result.exit_code in (0, ALREADY_DONE):
        written = ctx.patch_rollout_status(a.namespace, a.cluster, _progress_patch(status, a, revision, result.tail()))
        if result.exit_code == 0:
            reason = ev.HOOK_SUCCEEDED if a.kind == HOOK_STEP else ev.MIGRATION_SUCCEEDED
            output = result.tail(600)
            ctx.event_on_cluster(a.namespace, a.cluster, reason,
                                 f"{a.describe()}: succeeded" + (f". Output: {output}" if output else ""))
        return Outcome(a.describe(), result.exit_code == 0, result.tail() or "done",
                       expect=(Expectation(ROLLOUT_PLURAL, a.namespace, a.cluster, rv(written)),))
    if result.exit_code is None and not result.timed_out:  # never started: nothing ran, try again later
        return Outcome(a.describe(), False, result.error, failed=True, requeue_after=REQUEUE_STEP_FAILED)
    return _stall(ctx, a, obj, result, marker)


def _stall(ctx: ExecContext, a: RunStep, obj: dict[str, Any], result: ExecResult, marker: str) -> Outcome:
    if result.exit_code == INTERRUPTED:
        reason = "StepInterrupted"
        message = (f"{a.describe()} started before but never finished (controller or pod died during it); it is "
                   f"not run twice. Check pod {a.pod}, then remove {marker}.started in it to run the step again")
    elif result.timed_out:
        reason = "StepTimedOut"
        message = f"{a.describe()} did not finish within {a.timeout_seconds}s. Output: {result.tail(600)}"
    else:
        reason = "StepFailed"
        message = f"{a.describe()} failed with exit code {result.exit_code}. Output: {result.tail(600)}"
    ctx.event_on_cluster(a.namespace, a.cluster, ev.STEP_FAILED, message, warning=True)
    status = obj.get("status") or {}
    patch = rs.stall(status, reason=reason, message=message,
                     generation=int((obj.get("metadata") or {}).get("generation") or 0), now=ctx.now())
    patch.update(rs.pod_progress(a.pod, output=result.tail()))
    written = ctx.patch_rollout_status(a.namespace, a.cluster, patch)
    ctx.event_on_cluster(a.namespace, a.cluster, ev.UPGRADE_STALLED, f"{reason}: {message}", warning=True)
    return Outcome(a.describe(), True, message, failed=True,
                   expect=(Expectation(ROLLOUT_PLURAL, a.namespace, a.cluster, rv(written)),))
