"""Waves: a cluster moving to a new version waits until every lower-wave cluster of its app is Ready at the
target and has soaked (pure).

A cluster's wave is the gitops-kd.io/wave label of the KDCluster in Git (``KDCluster.wave``, default 0).
A lower-wave cluster is *settled* when its KDRollout is Idle at the app's target version with
Ready=True, every member pod is Ready, and nothing is left to plan for it; it has *soaked* once
``soak`` seconds passed since its Ready condition's lastTransitionTime. ``soak`` is the cluster's
annotation gitops-kd.io/wave-soak-seconds when present, else the controller's ``--wave-soak``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from gitops_kd.constants import SOAK_ANNOTATION, Phase
from gitops_kd.observed import ObservedCluster
from gitops_kd.plan.pods import POLL_SECONDS
from gitops_kd.spec.model import KDCluster

WAITING_PREFIX = "waiting for "  # status.step of a rollout a wave holds back


def parse_time(text: object) -> datetime | None:
    """An RFC 3339 timestamp as Kubernetes writes it (…Z), timezone-aware; None if absent or invalid."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def soak_seconds(cluster: KDCluster, default: float) -> float:
    """The soak of a cluster: its gitops-kd.io/wave-soak-seconds annotation (a number >= 0), else ``default``.

    Raises ValueError naming the file and annotation for a value that is not a number >= 0.
    """
    annotations = (cluster.frozen_body.get("metadata") or {}).get("annotations") or {}  # read, not thawed
    raw = annotations.get(SOAK_ANNOTATION)
    if raw is None:
        return default
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = -1.0
    if value < 0 or value != value:
        raise ValueError(
            f"{cluster.source}: metadata.annotations[{SOAK_ANNOTATION}]: must be a number of seconds >= 0, got {raw!r}"
        )
    return value


def ready_since(live: ObservedCluster, target: str) -> datetime | None:
    """When the cluster became Ready at ``target`` (its KDRollout's Ready lastTransitionTime), or None when
    it is not Ready at the target (no rollout, another version, not Idle, a member pod down)."""
    ro = live.rollout
    if ro is None or ro.phase != Phase.IDLE or ro.app_version != target or ro.target_version != target:
        return None
    if any(not p.up for p in live.all_pods()):
        return None
    long_ago = datetime.min.replace(tzinfo=UTC)
    for cond in ro.conditions:
        if cond.get("type") == "Ready":
            return (parse_time(cond.get("lastTransitionTime")) or long_ago) if cond.get("status") == "True" else None
    return long_ago  # an Idle rollout without conditions (written before conditions existed): Ready long ago


@dataclass(frozen=True)
class WaveMember:
    """One desired cluster of an app, as the wave gate sees it: its wave, and when it became settled at
    the target (None: not settled — rolling out, stalled, missing, or work still planned for it)."""

    key: tuple[str, str]
    wave: int
    settled_since: datetime | None
    soak: float


@dataclass(frozen=True)
class WaveBlock:
    """Why a cluster may not start yet, and when to look again; ``step`` is the same without the time left
    (what the KDRollout's status.step shows while it waits)."""

    reason: str
    requeue_after: float
    step: str = ""


def blocked(wave: int, members: Iterable[WaveMember], app: str, now: datetime) -> WaveBlock | None:
    """Whether a cluster of ``wave`` must wait for lower-wave clusters of ``app``; None when it may go."""
    waiting: list[tuple[WaveMember, float]] = []
    for m in sorted(members, key=lambda m: (m.wave, m.key)):
        if m.wave >= wave:
            continue
        if m.settled_since is None:
            text = f"cluster {m.key[0]}/{m.key[1]} of app {app} (wave {m.wave}) to be Ready at the target first"
            return WaveBlock(text, POLL_SECONDS, f"{WAITING_PREFIX}{text}")
        left = m.soak - (now - m.settled_since).total_seconds()
        if left > 0:
            waiting.append((m, left))
    if waiting:
        m, left = max(waiting, key=lambda x: x[1])
        text = f"cluster {m.key[0]}/{m.key[1]} of app {app} (wave {m.wave}) to soak {m.soak:g}s after becoming Ready"
        return WaveBlock(f"{text} ({left:.0f}s left)", max(0.05, left), f"{WAITING_PREFIX}{text}")
    return None


def members_by_app(
    members: Mapping[tuple[str, str], tuple[tuple[str, str], WaveMember]],
) -> dict[tuple[str, str], list[WaveMember]]:
    """Group {cluster key: (app key, member)} by app key."""
    out: dict[tuple[str, str], list[WaveMember]] = {}
    for app_key, member in members.values():
        out.setdefault(app_key, []).append(member)
    return out


__all__ = [
    "SOAK_ANNOTATION",
    "WAITING_PREFIX",
    "WaveBlock",
    "WaveMember",
    "blocked",
    "members_by_app",
    "parse_time",
    "ready_since",
    "soak_seconds",
]
