"""RunStep: a step of any run kind (execute/step_kinds.py) run in a member over exec, at most once per attempt."""

from __future__ import annotations

import logging
import re
from typing import Any

from gitops_kd.constants import REQUEUE_NOT_CACHED, ROLLOUT_PLURAL, STALL_AFTER_FAILURES, StallReason
from gitops_kd.execute.context import ExecContext, rv
from gitops_kd.execute.outcome import Outcome
from gitops_kd.execute.podexec import ExecResult
from gitops_kd.execute.repeat import retry_after, stall_rollout
from gitops_kd.execute.step_kinds import RUN_KINDS
from gitops_kd.observe.collector import Expectation
from gitops_kd.plan.actions import RunStep
from gitops_kd.rollout.model import RolloutStatus, pod_patch, status_patch

log = logging.getLogger(__name__)

STEPS_DIR = "/var/lib/gitops-kd/steps"
ALREADY_DONE, INTERRUPTED = 96, 97
BEAT_STALE = 10  # seconds without a heartbeat after which a started step's runner is taken for dead

# $1 = marker path (without suffix); the step's argv follows. mkdir is atomic: a second run of a step that started
# does not run the command again. While the command runs, its wrapper writes the time into <marker>.started/beat
# every second (and its pid into .../pid); a second run that finds the step started *awaits* it while that beat is
# fresh (the exec of a replica that lost the shard, or a frozen one, runs on in the pod): done -> "already done"; it
# failed while awaited -> its exit code (kept in .../rc); no beat for BEAT_STALE seconds and never done (the runner
# died half way), or found already failed -> INTERRUPTED, never run twice.
WRAPPER = (
    'm="$1"; shift; '
    f'if [ -e "$m.done" ]; then echo "gitops-kd: step already done"; exit {ALREADY_DONE}; fi; '
    'mkdir -p "$(dirname "$m")" || exit 98; '
    'if ! mkdir "$m.started" 2>/dev/null; then '
    "w=0; g=0; "
    'while [ ! -e "$m.done" ] && [ ! -e "$m.started/rc" ]; do '
    'b=$(cat "$m.started/beat" 2>/dev/null); '
    'case "$b" in ""|*[!0-9]*) [ "$g" -ge 2 ] && break; g=$((g+1)); sleep 1; continue;; esac; '
    f"g=0; [ $(( $(date +%s) - b )) -gt {BEAT_STALE} ] && break; "
    '[ "$w" -eq 0 ] && echo "gitops-kd: step running in another exec: awaiting it" >&2; '
    "w=1; sleep 1; "
    "done; "
    f'if [ -e "$m.done" ]; then echo "gitops-kd: step already done"; exit {ALREADY_DONE}; fi; '
    'if [ "$w" -eq 1 ] && [ -e "$m.started/rc" ]; then '
    'echo "gitops-kd: the awaited step failed with exit $(cat "$m.started/rc")" >&2; exit "$(cat "$m.started/rc")"; fi; '
    f'echo "gitops-kd: step started before and did not finish" >&2; exit {INTERRUPTED}; '
    "fi; "
    'echo $$ > "$m.started/pid"; date +%s > "$m.started/beat"; '
    '( while kill -0 $$ 2>/dev/null; do date +%s > "$m.started/beat"; sleep 1; done ) </dev/null >/dev/null 2>&1 & '
    "hb=$!; "
    '"$@"; rc=$?; '
    'kill "$hb" 2>/dev/null; '
    'if [ "$rc" -eq 0 ]; then touch "$m.done" || exit 98; else echo "$rc" > "$m.started/rc"; fi; '
    'exit "$rc"'
)


def marker_path(attempt: str, step_id: str) -> str:
    """/var/lib/gitops-kd/steps/<attempt id>-<step id with / and odd characters as _>."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", step_id).strip("_")
    return f"{STEPS_DIR}/{attempt}-{safe}"


def wrapped_command(attempt: str, step_id: str, command: tuple[str, ...]) -> list[str]:
    return ["/bin/sh", "-c", WRAPPER, "gitops-kd-step", marker_path(attempt, step_id), *command]


def attempt_id(obj: dict[str, Any]) -> str:
    """The KDRollout's current attempt (status.attempt); its uid for an attempt started before ids existed."""
    return RolloutStatus.from_obj(obj.get("status")).attempt or str((obj.get("metadata") or {}).get("uid") or "rollout")


def _recorded(status: RolloutStatus, a: RunStep) -> bool:
    return RUN_KINDS[a.kind].progress.recorded(status.progress(a.pod), a.step_id)


def _progress_patch(status: RolloutStatus, a: RunStep, revision: str, output: str) -> dict[str, Any]:
    fields: dict[str, Any] = {"revision": revision, "output": output, "exec_failures": None}
    fields.update(RUN_KINDS[a.kind].progress.done_fields(status.progress(a.pod), a.step_id))
    return {**pod_patch(a.pod, **fields), **status_patch(step=f"{a.kind} done in {a.pod}")}


def run_step(ctx: ExecContext, a: RunStep) -> Outcome:
    obj = ctx.rollout(a.namespace, a.cluster)
    if obj is None:
        return Outcome(a.describe(), False, "no KDRollout", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    status = RolloutStatus.from_obj(obj.get("status"))
    if _recorded(status, a):
        return Outcome(a.describe(), False, "step already recorded as done")
    pod = ctx.rest.get_or_none("v1", "pods", a.namespace, a.pod)
    if pod is None:
        return Outcome(a.describe(), False, f"pod {a.pod} not found", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    revision = ((pod.get("metadata") or {}).get("labels") or {}).get("controller-revision-hash", "")
    marker = marker_path(attempt_id(obj), a.step_id)
    result = ctx.pod_exec.run(
        a.namespace, a.pod, a.container, wrapped_command(attempt_id(obj), a.step_id, a.command), timeout=float(a.timeout_seconds)
    )
    log.info("step %s in %s/%s: exit %s\n%s", a.step_id, a.namespace, a.pod, result.exit_code, result.tail())
    if result.exit_code in (0, ALREADY_DONE):
        written = ctx.patch_rollout_status(
            a.namespace, a.cluster, _progress_patch(status, a, revision, result.tail()), rv=rv(obj)
        )
        if result.exit_code == 0:
            reason = RUN_KINDS[a.kind].succeeded
            output = result.tail(600)
            ctx.event_on_cluster(
                a.namespace, a.cluster, reason, f"{a.describe()}: succeeded" + (f". Output: {output}" if output else "")
            )
        return Outcome(
            a.describe(),
            result.exit_code == 0,
            result.tail() or "done",
            expect=(Expectation(ROLLOUT_PLURAL, a.namespace, a.cluster, rv(written)),),
        )
    if result.exit_code is None and not result.timed_out:  # refused, or no answer: the marker makes a retry safe
        return _exec_refused(ctx, a, obj, result)
    return _stall(ctx, a, obj, result, marker)


def _exec_refused(ctx: ExecContext, a: RunStep, obj: dict[str, Any], result: ExecResult) -> Outcome:
    """Count an exec that never started, or whose answer was lost (the step may have run: its retry finds the
    marker), in PodProgress.exec_failures; the STALL_AFTER_FAILURES-th in a row stalls the rollout
    (ExecFailed) with a Warning event. Retries back off (repeat.retry_after)."""
    progress = RolloutStatus.from_obj(obj.get("status")).progress(a.pod)
    failures = (progress.exec_failures if progress is not None else 0) + 1
    if failures >= STALL_AFTER_FAILURES:
        message = (
            f"{a.describe()}: the exec could not be started or gave no answer {failures} times in a row; "
            f"last error: {result.error or result.tail(300)}"
        )
        return _stall_with(ctx, a, obj, StallReason.EXEC_FAILED, message, {"exec_failures": failures})
    written = ctx.patch_rollout_status(a.namespace, a.cluster, pod_patch(a.pod, exec_failures=failures), rv=rv(obj))
    what = "exec gave no answer" if result.lost else "exec not started"
    return Outcome(
        a.describe(),
        True,
        f"{what} ({failures}/{STALL_AFTER_FAILURES}): {result.error}",
        failed=True,
        requeue_after=retry_after(failures),
        expect=(Expectation(ROLLOUT_PLURAL, a.namespace, a.cluster, rv(written)),),
    )


def _stall(ctx: ExecContext, a: RunStep, obj: dict[str, Any], result: ExecResult, marker: str) -> Outcome:
    if result.exit_code == INTERRUPTED:
        reason = StallReason.STEP_INTERRUPTED
        message = (
            f"{a.describe()} started before but never finished (controller or pod died during it); it is "
            f"not run twice. Check pod {a.pod}, then remove {marker}.started in it to run the step again"
        )
    elif result.timed_out:
        reason = StallReason.STEP_TIMED_OUT
        message = f"{a.describe()} did not finish within {a.timeout_seconds}s. Output: {result.tail(600)}"
    else:
        reason = StallReason.STEP_FAILED
        message = f"{a.describe()} failed with exit code {result.exit_code}. Output: {result.tail(600)}"
    return _stall_with(ctx, a, obj, reason, message, {"output": result.tail()})


def _stall_with(
    ctx: ExecContext, a: RunStep, obj: dict[str, Any], reason: str, message: str, progress: dict[str, Any]
) -> Outcome:
    """Stall the rollout (one status write with the pod's progress fields, PodProgress names) and say so in two
    Warning events."""
    written = stall_rollout(ctx, a.namespace, a.cluster, obj, reason, message, pod_patch(a.pod, **progress))
    return Outcome(
        a.describe(), True, message, failed=True, expect=(Expectation(ROLLOUT_PLURAL, a.namespace, a.cluster, rv(written)),)
    )
