"""The last condition of Ready: a cluster whose pods all run the version waits until KubeDirector reports it ready
(kd/readiness.py), Reconciling meanwhile and Stalled when it reports an error or lasts too long (pure)."""

from __future__ import annotations

from datetime import datetime

from gitops_kd.constants import KUBEDIRECTOR_READY_CONDITION
from gitops_kd.kd.readiness import kd_readiness
from gitops_kd.observed import ObservedCluster
from gitops_kd.plan.actions import Action, MarkKubeDirectorNotReady, Wait
from gitops_kd.plan.podcontext import POLL_SECONDS


def kubedirector_ready(live: ObservedCluster) -> bool:
    """True when KubeDirector reports the cluster ready: state configured, every member configured and up."""
    return kd_readiness(live.raw).ready


def kubedirector_steps(live: ObservedCluster, timeout: int, now: datetime) -> list[Action]:
    """Nothing when KubeDirector reports the cluster ready. Else a MarkKubeDirectorNotReady with its words (unless
    the KDRollout says it already), stalled when KubeDirector reports an error or has not been ready for more than
    ``timeout`` seconds (podReadyTimeoutSeconds) since the KDRollout first said so, and a Wait."""
    verdict = kd_readiness(live.raw)
    if verdict.ready:
        return []
    since = live.rollout.kubedirector_since if live.rollout is not None else None
    waited = (now - since).total_seconds() if since is not None else 0.0
    late = since is not None and waited > timeout
    message = verdict.message + (
        f"; not ready for more than {timeout}s (podReadyTimeoutSeconds) after every pod ran the version" if late else ""
    )
    stalled = verdict.error or late
    out: list[Action] = []
    if not _says(live, message, stalled):
        out.append(MarkKubeDirectorNotReady(live.namespace, live.name, message, stalled))
    left = timeout - waited + 1 if since is not None and not stalled else POLL_SECONDS
    out.append(Wait(f"KubeDirector to report the cluster ready: {verdict.message}", max(0.5, min(POLL_SECONDS, left)), live.key))
    return out


def _says(live: ObservedCluster, message: str, stalled: bool) -> bool:
    """The KDRollout already says it: KubeDirectorReady False with ``message``, Stalled as ``stalled``."""
    ro = live.rollout
    if ro is None or not ro.kubedirector_marked:
        return False
    kd = next((c for c in ro.conditions if c.get("type") == KUBEDIRECTOR_READY_CONDITION), {})
    is_stalled = any(c.get("type") == "Stalled" and c.get("status") == "True" for c in ro.conditions)
    return kd.get("message") == message and is_stalled == stalled and ro.recorded.message == message
