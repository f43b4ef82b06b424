"""The pod phase of a rollout: which member to replace next, its migrations, hook and gate (pure).

One pod at a time per cluster: pods are visited in the stanza's role order, highest ordinal first
within a role (as a StatefulSet rolling update). A pod at the new revision must be Ready and have
its post-upgrade steps (plan/steps: migrations, hook, gate) done (upgrades only) before the next pod is deleted; a pod
is deleted only when every other pod of the cluster is Ready and not deleting.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitops_kd.diff.model import UPGRADE, PortsDiff
from gitops_kd.diff.transition import stale_image
from gitops_kd.kd import layout
from gitops_kd.observed import ObservedPod
from gitops_kd.plan.actions import ADOPT, REBUILD, Action, DeletePod, Wait
from gitops_kd.plan.podcontext import POLL_SECONDS, PodContext, not_ready
from gitops_kd.plan.steps import STEP_KINDS
from gitops_kd.plan.steps.kind import StepKind
from gitops_kd.render.template import dir_actions
from gitops_kd.rollout.model import Stage

__all__ = ["POLL_SECONDS", "PodContext", "down_pods", "outdated", "pod_stages", "pod_steps", "post_steps", "whole_sequence"]


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


def _next_step(ctx: PodContext, pod: ObservedPod) -> tuple[StepKind, Action] | None:
    """The first step kind of the registry (plan/steps) with work left for an upgraded pod, and its action."""
    stanza = ctx.transition.stanza
    if ctx.transition.direction != UPGRADE or stanza is None:
        return None
    progress = ctx.rollout.progress(pod.name) if ctx.rollout is not None else None
    if progress is not None and progress.revision and progress.revision != pod.revision:
        progress = None  # recorded for another revision of the pod: not this rollout's work
    for kind in STEP_KINDS:
        action = kind.next_action(ctx, pod, progress)
        if action is not None:
            return kind, action
    return None


def post_steps(ctx: PodContext, pod: ObservedPod) -> Action | None:
    """The next migration / hook / gate action for an upgraded pod, or None when it is done: the first step kind
    of the registry (plan/steps) with work left for the pod; a pod not Ready waits (or stalls) before it."""
    step = _next_step(ctx, pod)
    if step is None:
        return None
    return step[1] if pod.up else not_ready(ctx, pod, "upgraded")


def pod_stages(ctx: PodContext) -> dict[str, Stage]:
    """Where each member pod is in the rollout, by the rules `pod_steps` acts on: pending (runs the old template),
    replacing (deleting, missing, or at the new revision and not Ready), the stage of its first step kind with
    work left (migrating, hook, waiting-gate), else done. The planner records it (RecordStages) so that the UI,
    the CLI and health read one answer instead of deriving their own."""
    out: dict[str, Stage] = {name: Stage.REPLACING for name in down_pods(ctx)}
    for pod in _visit_order(ctx):
        if outdated(ctx, pod):
            out[pod.name] = Stage.REPLACING if pod.deleting else Stage.PENDING
        elif not pod.up:
            out[pod.name] = Stage.REPLACING
        else:
            step = _next_step(ctx, pod)
            out[pod.name] = step[0].STAGE if step is not None else Stage.DONE
    return out


def pod_steps(ctx: PodContext) -> tuple[list[Action], bool]:
    """(actions, finished): the next pod action of the cluster; finished when every pod runs the target
    template, is Ready and has its post-upgrade steps done."""
    for pod in _visit_order(ctx):
        if not outdated(ctx, pod):
            step = post_steps(ctx, pod)
            if step is not None:
                return [step], False
            if not pod.up:
                return [not_ready(ctx, pod, "new revision")], False
            continue
        others = [name for name in down_pods(ctx) if name != pod.name]
        if others:
            blocker = ctx.live.pod(others[0])
            if blocker is not None and not outdated(ctx, blocker):
                return [not_ready(ctx, blocker, "new revision")], False
            return [Wait(f"pod {others[0]} to be Ready before replacing {pod.name}", POLL_SECONDS, ctx.key)], False
        if pod.deleting:
            return [Wait(f"pod {pod.name} to be recreated", POLL_SECONDS, ctx.key)], False
        return [DeletePod(ctx.namespace, pod.name, pod.uid, ctx.live.name, pod.role)], False
    missing = down_pods(ctx)
    if missing:
        return [Wait(f"pod {missing[0]} to be recreated", POLL_SECONDS, ctx.key)], False
    return [], True


def whole_sequence(ctx: PodContext, ports: Iterable[PortsDiff] = ()) -> list[tuple[ObservedPod, list[str]]]:
    """Every pod the rollout will replace, in the order the planner replaces them (role order, highest ordinal
    first), each with what follows its deletion, as text with values: its own member Service's port change
    (``ports``: the diff's; a Service moves with its pod, plan/services.py), Ready within the timeout, then
    (upgrades with a stanza) the lines of each step kind (plan/steps). Derived from
    the same functions `pod_steps` uses, for a reviewer: the planner itself only plans up to the next step."""
    upgrade = ctx.transition.direction == UPGRADE and ctx.transition.stanza is not None
    moving = {p.service: p for p in ports}
    out: list[tuple[ObservedPod, list[str]]] = []
    for pod in _visit_order(ctx):
        if not outdated(ctx, pod):
            continue
        steps = [f"delete pod {pod.name} (uid {pod.uid}); the StatefulSet recreates it at the new revision"]
        for svc in ctx.live.member_services():
            if svc.pod == pod.name and svc.name in moving:
                before = ", ".join(f"{p.get('name')} {p.get('port')}" for p in svc.ports) or "none"
                after = ", ".join(f"{n} {port}" for n, port in moving[svc.name].ports)
                steps.append(f"its Service {svc.name}: ports {before} -> {after}, as the pod goes (not before)")
        rules = ctx.transition.rules
        dirs = ctx.app.role(pod.role).effective_persist_dirs if rules is not None else ()
        if dirs:
            steps.append(
                "init container, persisted data: " + ", ".join(f"{d} {action}" for d, action in dir_actions(dirs, rules))
            )
        steps.append(f"wait for {pod.name} Ready (podReadyTimeoutSeconds {ctx.ready_timeout}, else Stalled PodNotReady)")
        if upgrade:
            for kind in STEP_KINDS:
                steps.extend(kind.sequence(ctx, pod))
        out.append((pod, steps))
    return out
