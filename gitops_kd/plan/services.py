"""Member Service ports during a rollout: each member's Service moves with its own pod, never before it (pure).

KubeDirector gives each member its own Service selecting only that pod (rollout/reach.py). A Service whose ports
differ from what Git asks is patched only once its pod no longer runs the template it was made for: the pod is
being deleted, missing (being recreated), or at the role's current template (replaced, or never outdated: an
adoption, a drift revert), and never while the role's StatefulSet has not observed its latest template. While its
pod still runs the old template (not replaced yet, or a rollout halted before it) the Service keeps the ports that
pod listens on. DeletePod comes first, so the Service moves while its own pod is down: a crash between the two
leaves a deleting or recreated pod, and the next plan patches its Service.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitops_kd.diff.model import PortsDiff
from gitops_kd.plan.actions import PatchServicePorts
from gitops_kd.plan.pods import PodContext, outdated


def moves_now(ctx: PodContext, service: str) -> bool:
    """True when the member Service ``service`` may take Git's ports now: its role's StatefulSet has observed its
    latest spec (before that its update revision is the previous template's, and a pod at it looks replaced) and
    its pod is not a running pod of the old template (a Service selecting no member pod is not held either)."""
    found = next((s for s in ctx.live.services if s.name == service), None)
    if found is None or found.role is None:
        return True
    sts = ctx.live.statefulset(found.role)
    if sts is not None and not sts.settled:
        return False
    pod = ctx.live.pod(found.pod) if found.pod else None
    return pod is None or pod.deleting or not outdated(ctx, pod)


def service_steps(ctx: PodContext, ports: Iterable[PortsDiff]) -> list[PatchServicePorts]:
    """PatchServicePorts for each member Service whose ports differ from Git's and whose pod lets it move now."""
    return [
        PatchServicePorts(ctx.namespace, p.service, tuple({"name": n, "port": port} for n, port in p.ports), ctx.live.name)
        for p in ports
        if moves_now(ctx, p.service)
    ]


__all__ = ["moves_now", "service_steps"]
