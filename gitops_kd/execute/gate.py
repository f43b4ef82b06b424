"""CheckGate: probe the app's upgrade gate in the member just upgraded (its probe's command, run inside the pod).

A check that does not pass writes the KDRollout's status (and logs) only when what it says changes: a gate waiting
with the same answer is one write and one log line, however long it waits; the actor holds the check for the
gate's period in memory (a restart checks once more at once)."""

from __future__ import annotations

import logging
from typing import Any

from gitops_kd.constants import REQUEUE_NOT_CACHED, ROLLOUT_PLURAL
from gitops_kd.execute.context import ExecContext, rv
from gitops_kd.execute.outcome import Outcome
from gitops_kd.kd.layout import APP_CONTAINER
from gitops_kd.observe.collector import Expectation
from gitops_kd.plan.actions import CheckGate
from gitops_kd.plan.steps import gate as gate_step
from gitops_kd.rollout.model import RolloutStatus, pod_patch, status_patch
from gitops_kd.status import events as ev
from gitops_kd.status.conditions import rfc3339

log = logging.getLogger(__name__)
PROBE_TIMEOUT = 10.0


def _container(pod: dict[str, Any]) -> str | None:
    names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or ()]
    return APP_CONTAINER if APP_CONTAINER in names else (names[0] if names else None)


def check_gate(ctx: ExecContext, a: CheckGate) -> Outcome:
    obj = ctx.rollout(a.namespace, a.cluster)
    if obj is None:
        return Outcome(a.describe(), False, "no KDRollout", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    progress = RolloutStatus.from_obj(obj.get("status")).progress(a.pod)
    if gate_step.done(progress):
        return Outcome(a.describe(), False, "gate already passed")
    pod = ctx.rest.get_or_none("v1", "pods", a.namespace, a.pod)
    if pod is None:
        return Outcome(a.describe(), False, f"pod {a.pod} not found", failed=True, requeue_after=REQUEUE_NOT_CACHED)
    gate = a.gate
    command = gate.probe.command()
    result = ctx.pod_exec.run(
        a.namespace, a.pod, _container(pod), command, timeout=min(PROBE_TIMEOUT, float(max(1, gate.timeout_seconds)))
    )
    revision = ((pod.get("metadata") or {}).get("labels") or {}).get("controller-revision-hash", "")
    if result.ok:
        patch = pod_patch(a.pod, **gate_step.done_fields(progress), revision=revision)
        patch.update(status_patch(gate_checked_at=rfc3339(ctx.now()), step=f"gate passed in {a.pod}"))
        written = ctx.patch_rollout_status(a.namespace, a.cluster, patch, rv=rv(obj))
        ctx.event_on_cluster(a.namespace, a.cluster, ev.GATE_PASSED, f"upgrade gate passed in pod {a.pod}")
        return Outcome(
            a.describe(), True, "gate passed", expect=(Expectation(ROLLOUT_PLURAL, a.namespace, a.cluster, rv(written)),)
        )
    detail = result.tail(300) or result.error or f"exit code {result.exit_code}"
    step = f"gate in {a.pod} not passed yet: {detail}"  # not the wave's "waiting for " note (plan/waves.py)
    if RolloutStatus.from_obj(obj.get("status")).step == step:
        # Nothing a reader sees changed: no write (the actor holds this check for the period, in memory).
        return Outcome(a.describe(), False, f"gate not passed yet: {detail}", requeue_after=float(gate.period_seconds))
    written = ctx.patch_rollout_status(
        a.namespace, a.cluster, status_patch(gate_checked_at=rfc3339(ctx.now()), step=step), rv=rv(obj)
    )
    log.info("gate in %s/%s not passed yet (checked every %ss): %s", a.namespace, a.pod, gate.period_seconds, detail)
    return Outcome(
        a.describe(),
        False,
        f"gate not passed yet: {detail}",
        requeue_after=float(gate.period_seconds),
        expect=(Expectation(ROLLOUT_PLURAL, a.namespace, a.cluster, rv(written)),),
    )
