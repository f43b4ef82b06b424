"""Ready is what the pods run: the images a version renders, and the Stall of a rollout Ready over pods that run
another version when the plan is refused and nothing may bring them back (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gitops_kd.constants import Phase, StallReason
from gitops_kd.observed import ObservedCluster, ObservedPod
from gitops_kd.plan.actions import Stall
from gitops_kd.spec.model import KDApp
from gitops_kd.spec.state import DesiredState


def role_images(app: KDApp) -> tuple[tuple[str, str], ...]:
    """(role id, app image) of every role of the app: what its version renders (KDRollout status.images)."""
    out: list[tuple[str, str]] = []
    for rid in app.role_ids:
        image = app.role(rid).image
        if image:
            out.append((rid, image))
    return tuple(out)


def claimed_images(live: ObservedCluster, desired: DesiredState | None = None) -> Mapping[str, str]:
    """The images the cluster's rollout is Ready at: status.images, else (a record written before it existed) the
    desired app's when Git asks that very version; empty when unknown."""
    ro = live.rollout
    if ro is None:
        return {}
    if ro.images:
        return ro.images
    if desired is not None:
        for key, app in desired.apps.items():
            if app.name == (ro.app or live.app) and app.version == ro.app_version and key[0] == live.namespace:
                return dict(role_images(app))
    return {}


def off_version(live: ObservedCluster, images: Mapping[str, str]) -> list[ObservedPod]:
    """Member pods whose app container runs another image than ``images`` asks for their role."""
    return [p for p in live.all_pods() if p.image and images.get(p.role) not in (None, p.image)]


def _claims_ready(live: ObservedCluster) -> bool:
    ro = live.rollout
    return (
        ro is not None
        and ro.phase == Phase.IDLE
        and any(c.get("type") == "Ready" and c.get("status") == "True" for c in ro.conditions)
    )


def pods_off_version(clusters: Iterable[ObservedCluster], desired: DesiredState | None = None) -> list[Stall]:
    """A Stall for each rollout that says Ready while member pods run another image than its version renders."""
    out: list[Stall] = []
    for live in clusters:
        if not _claims_ready(live):
            continue
        images = claimed_images(live, desired)
        wrong = off_version(live, images)
        if wrong and live.rollout is not None:
            pod = wrong[0]
            more = f" (and {len(wrong) - 1} more pod(s))" if len(wrong) > 1 else ""
            out.append(
                Stall(
                    live.namespace,
                    live.name,
                    StallReason.PODS_OFF_VERSION,
                    (
                        f"pod {pod.name} runs {pod.image}, not {images[pod.role]} of {live.rollout.app or live.app} "
                        f"{live.rollout.app_version}{more}; the plan is refused, so gitops-kd cannot bring it back"
                    ),
                )
            )
    return out


__all__ = ["claimed_images", "off_version", "pods_off_version", "role_images"]
