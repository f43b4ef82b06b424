"""What the pod phase knows of one cluster's rollout (PodContext), and its wait for a pod to be Ready (pure)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from gitops_kd.constants import StallReason
from gitops_kd.diff.model import Transition
from gitops_kd.observed import ObservedCluster, ObservedPod, ObservedRollout
from gitops_kd.plan.actions import Action, Stall, Wait
from gitops_kd.spec.model import KDApp
from gitops_kd.spec.upgrade import DEFAULT_POD_READY_TIMEOUT

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


def not_ready(ctx: PodContext, pod: ObservedPod, why: str) -> Action:
    """Wait for a pod at the new revision to become Ready, or Stall after podReadyTimeoutSeconds."""
    if pod.created_at is not None and not pod.deleting:
        age = (ctx.now - pod.created_at).total_seconds()
        if age > ctx.ready_timeout:
            return Stall(
                ctx.namespace,
                ctx.live.name,
                StallReason.POD_NOT_READY,
                (
                    f"pod {pod.name} ({why}) is not Ready {int(age)}s after its creation "
                    f"(podReadyTimeoutSeconds {ctx.ready_timeout})"
                ),
            )
        return Wait(f"pod {pod.name} to become Ready ({why})", min(POLL_SECONDS, ctx.ready_timeout - age + 1), ctx.key)
    return Wait(f"pod {pod.name} to be recreated ({why})", POLL_SECONDS, ctx.key)
