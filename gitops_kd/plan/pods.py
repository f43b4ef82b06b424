"""The pod phase of a rollout: which member to replace next, its migrations, hook and gate (pure).

One pod at a time per cluster: pods are visited in the stanza's role order, highest ordinal first
within a role (as a StatefulSet rolling update). A pod at the new revision must be Ready and have
its migrations, postUpgrade hook and gate done (upgrades only) before the next pod is deleted; a pod
is deleted only when every other pod of the cluster is Ready and not deleting.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from gitops_kd.constants import STALL_GATE_TIMEOUT, STALL_POD_NOT_READY
from gitops_kd.diff.model import UPGRADE, Transition
from gitops_kd.diff.transition import stale_image
from gitops_kd.kd import layout
from gitops_kd.observe.model import ObservedCluster, ObservedPod, ObservedRollout
from gitops_kd.plan.actions import (
    ADOPT,
    HOOK_STEP,
    MIGRATE_STEP,
    REBUILD,
    Action,
    CheckGate,
    DeletePod,
    RunStep,
    Stall,
    StartGate,
    Wait,
)
from gitops_kd.render.template import dir_actions
from gitops_kd.spec.model import KDApp
from gitops_kd.spec.upgrade import DEFAULT_POD_READY_TIMEOUT, MIGRATE

POLL_SECONDS = 5.0


@dataclass(frozen=True)
class PodContext:
    """What the pod phase needs about one cluster's rollout."""

    app: KDApp
    live: ObservedCluster
    transition: Transition
    rollout: ObservedRollout | None  # the rollout record for this target (None while EnsureRollout is pending)
    order: tuple[str, ...]  # role ids with a StatefulSet, in upgrade order
    pending_patch_roles: Collection[str]  # roles whose template patch is still pending
    now: datetime

    @property
    def namespace(self) -> str:
        return self.live.namespace

    @property
    def key(self) -> tuple[str, str]:
        return self.live.key

    @property
    def ready_timeout(self) -> int:
        stanza = self.transition.stanza
        return stanza.pod_ready_timeout_seconds if stanza is not None else DEFAULT_POD_READY_TIMEOUT


def outdated(ctx: PodContext, pod: ObservedPod) -> bool:
    """True when the pod must be replaced: it does not run the role's (pending or current) template.

    Adoption and rebuild (no version change) replace only pods whose app container runs another image than
    the app asks for (none, for an adoption): the template gitops-kd installs (its init container, the
    .gitops-kd mount) only matters to the next upgrade, which replaces every pod anyway. A stateful cluster
    is not restarted for being adopted.
    """
    if ctx.transition.direction in (ADOPT, REBUILD):
        return stale_image(ctx.app, pod)
    if pod.role in ctx.pending_patch_roles:
        return True
    sts = ctx.live.statefulset(pod.role)
    return sts is not None and pod.revision != sts.update_revision


def down_pods(ctx: PodContext) -> list[str]:
    """Pods (or missing ordinals) not Ready or being deleted, by name."""
    out: list[str] = []
    for rid in ctx.order:
        sts = ctx.live.statefulset(rid)
        pods = {p.ordinal: p for p in ctx.live.role_pods(rid)}
        for ordinal in range(sts.replicas if sts is not None else 0):
            pod = pods.get(ordinal)
            if pod is None:
                out.append(layout.member_pod_name(sts.name, ordinal) if sts is not None else f"{rid}-{ordinal}")
            elif not pod.up:
                out.append(pod.name)
    return out


def _visit_order(ctx: PodContext) -> list[ObservedPod]:
    return [p for rid in ctx.order for p in sorted(ctx.live.role_pods(rid), key=lambda p: -p.ordinal)]


def _not_ready(ctx: PodContext, pod: ObservedPod, why: str) -> Action:
    """Wait for a pod at the new revision to become Ready, or Stall after podReadyTimeoutSeconds."""
    if pod.created_at is not None and not pod.deleting:
        age = (ctx.now - pod.created_at).total_seconds()
        if age > ctx.ready_timeout:
            return Stall(ctx.namespace, ctx.live.name, STALL_POD_NOT_READY, (
                f"pod {pod.name} ({why}) is not Ready {int(age)}s after its creation "
                f"(podReadyTimeoutSeconds {ctx.ready_timeout})"))
        return Wait(f"pod {pod.name} to become Ready ({why})", min(POLL_SECONDS, ctx.ready_timeout - age + 1), ctx.key)
    return Wait(f"pod {pod.name} to be recreated ({why})", POLL_SECONDS, ctx.key)


def _migrations(ctx: PodContext, pod: ObservedPod) -> list[RunStep]:
    rules = ctx.transition.rules
    if rules is None:
        return []
    steps: list[RunStep] = []
    dirs = ctx.app.role(pod.role).effective_persist_dirs
    for directory, action in dir_actions(dirs, rules):
        rule = rules.action_for(directory)
        if action == MIGRATE and rule.migrate is not None:
            step_id = f"{ctx.transition.target_version}/{pod.name}/{MIGRATE_STEP}{directory}"
            steps.append(RunStep(ctx.namespace, ctx.live.name, pod.name, layout.APP_CONTAINER, step_id, MIGRATE_STEP,
                                 rule.migrate.command, rule.migrate.timeout_seconds, directory))
    return steps


def post_steps(ctx: PodContext, pod: ObservedPod) -> Action | None:
    """The next migration / hook / gate action for an upgraded pod, or None when it is done."""
    stanza = ctx.transition.stanza
    if ctx.transition.direction != UPGRADE or stanza is None:
        return None
    progress = ctx.rollout.progress(pod.name) if ctx.rollout is not None else None
    if progress is not None and progress.revision and progress.revision != pod.revision:
        progress = None  # recorded for another revision of the pod: not this rollout's work
    done = set(progress.migrations_done) if progress is not None else set()
    pending: list[Action] = [s for s in _migrations(ctx, pod) if s.step_id not in done]
    hook = stanza.post_upgrade
    if hook is not None and hook.applies_to(pod.role) and not (progress and progress.hook_done):
        pending.append(RunStep(ctx.namespace, ctx.live.name, pod.name, layout.APP_CONTAINER,
                               f"{ctx.transition.target_version}/{pod.name}/{HOOK_STEP}", HOOK_STEP, hook.command,
                               hook.timeout_seconds))
    if pending:
        return pending[0] if pod.up else _not_ready(ctx, pod, "upgraded")
    gate = stanza.gate
    if gate is None or not gate.applies_to(pod.role) or (progress and progress.gate_passed):
        return None
    if not pod.up:
        return _not_ready(ctx, pod, "upgraded")
    rollout = ctx.rollout
    if rollout is None or rollout.current_pod != pod.name or rollout.gate_started_at is None:
        return StartGate(ctx.namespace, ctx.live.name, pod.name)
    elapsed = (ctx.now - rollout.gate_started_at).total_seconds()
    if elapsed > gate.timeout_seconds:
        return Stall(ctx.namespace, ctx.live.name, STALL_GATE_TIMEOUT, (
            f"the upgrade gate of pod {pod.name} has not passed {int(elapsed)}s after it started "
            f"(timeoutSeconds {gate.timeout_seconds})"))
    if rollout.gate_checked_at is not None:
        since = (ctx.now - rollout.gate_checked_at).total_seconds()
        if since < gate.period_seconds:
            return Wait(f"next gate check of pod {pod.name}", gate.period_seconds - since, ctx.key)
    return CheckGate(ctx.namespace, ctx.live.name, pod.name, pod.role, gate)


def pod_steps(ctx: PodContext) -> tuple[list[Action], bool]:
    """(actions, finished): the next pod action of the cluster; finished when every pod runs the target
    template, is Ready and has its post-upgrade steps done."""
    for pod in _visit_order(ctx):
        if not outdated(ctx, pod):
            step = post_steps(ctx, pod)
            if step is not None:
                return [step], False
            if not pod.up:
                return [_not_ready(ctx, pod, "new revision")], False
            continue
        others = [name for name in down_pods(ctx) if name != pod.name]
        if others:
            blocker = ctx.live.pod(others[0])
            if blocker is not None and not outdated(ctx, blocker):
                return [_not_ready(ctx, blocker, "new revision")], False
            return [Wait(f"pod {others[0]} to be Ready before replacing {pod.name}", POLL_SECONDS, ctx.key)], False
        if pod.deleting:
            return [Wait(f"pod {pod.name} to be recreated", POLL_SECONDS, ctx.key)], False
        return [DeletePod(ctx.namespace, pod.name, pod.uid, ctx.live.name, pod.role)], False
    missing = down_pods(ctx)
    if missing:
        return [Wait(f"pod {missing[0]} to be recreated", POLL_SECONDS, ctx.key)], False
    return [], True


def whole_sequence(ctx: PodContext) -> list[tuple[ObservedPod, list[str]]]:
    """Every pod the rollout will replace, in the order the planner replaces them (role order, highest ordinal
    first), each with what follows its deletion, as text with values: Ready within the timeout, then (upgrades
    with a stanza) each migration with its command and timeout, the postUpgrade hook and the gate. Derived from
    the same functions `pod_steps` uses, for a reviewer: the planner itself only plans up to the next step."""
    stanza = ctx.transition.stanza
    upgrade = ctx.transition.direction == UPGRADE and stanza is not None
    out: list[tuple[ObservedPod, list[str]]] = []
    for pod in _visit_order(ctx):
        if not outdated(ctx, pod):
            continue
        steps = [f"delete pod {pod.name} (uid {pod.uid}); the StatefulSet recreates it at the new revision"]
        rules = ctx.transition.rules
        dirs = ctx.app.role(pod.role).effective_persist_dirs if rules is not None else ()
        if dirs:
            steps.append("init container, persisted data: " + ", ".join(
                f"{d} {action}" for d, action in dir_actions(dirs, rules)))
        steps.append(f"wait for {pod.name} Ready (podReadyTimeoutSeconds {ctx.ready_timeout}, else Stalled PodNotReady)")
        if upgrade and stanza is not None:
            for step in _migrations(ctx, pod):
                steps.append(f"migrate {step.directory}: {shlex.join(step.command)} (timeout {step.timeout_seconds}s)")
            hook = stanza.post_upgrade
            if hook is not None and hook.applies_to(pod.role):
                steps.append(f"postUpgrade hook: {shlex.join(hook.command)} (timeout {hook.timeout_seconds}s)")
            gate = stanza.gate
            if gate is not None and gate.applies_to(pod.role):
                steps.append(f"gate: {gate.probe.describe(pod.name)} every {gate.period_seconds}s until it passes "
                             f"(timeout {gate.timeout_seconds}s, else Stalled GateTimeout)")
        out.append((pod, steps))
    return out
