"""The whole sequence a commit will run, pod by pod in wave order, with its values (pure)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from gitops_kd.diff import diff
from gitops_kd.observed import ObservedState
from gitops_kd.plan.planner import role_order
from gitops_kd.plan.pods import PodContext, whole_sequence
from gitops_kd.spec.state import DesiredState


@dataclass(frozen=True)
class PodSequence:
    pod: str
    role: str
    steps: tuple[str, ...]


@dataclass(frozen=True)
class ClusterSequence:
    """One cluster's rollout: wave, direction, versions, role order and every pod replaced with its steps."""

    namespace: str
    name: str
    wave: int
    direction: str
    from_version: str | None
    to_version: str
    roles: tuple[str, ...]
    pods: tuple[PodSequence, ...]


def sequences(head: DesiredState, observed: ObservedState, *, now: datetime) -> list[ClusterSequence]:
    """Every cluster of ``head`` that replaces pods against ``observed``, in wave order (then name)."""
    report = diff(head, observed)
    out: list[ClusterSequence] = []
    for key in sorted(head.clusters, key=lambda k: (head.clusters[k].wave, k)):
        cdiff, live = report.cluster(key), observed.clusters.get(key)
        if cdiff is None or cdiff.app is None or live is None or not cdiff.exists or cdiff.transition is None:
            continue
        app, t = head.apps[cdiff.app], cdiff.transition
        order = role_order(app, t, live)
        ctx = PodContext(app, live, t, live.rollout, order, frozenset(r.role for r in cdiff.roles), now)
        pods = tuple(PodSequence(p.name, p.role, tuple(steps)) for p, steps in whole_sequence(ctx, cdiff.ports))
        if pods:
            out.append(
                ClusterSequence(
                    key[0], key[1], head.clusters[key].wave, t.direction, t.from_version, t.target_version, order, pods
                )
            )
    return out


def sequence_lines(found: list[ClusterSequence], wave_soak_seconds: float = 0.0) -> Iterator[str]:
    """The sequences as text: a header per wave, per cluster, then numbered pods with their steps indented."""
    if not found:
        return
    yield "whole sequence (every pod replaced, in order):"
    wave: int | None = None
    for c in found:
        if c.wave != wave:
            if wave is not None and wave_soak_seconds:
                yield f"  then soak {wave_soak_seconds:g}s before the next wave"
            wave = c.wave
            yield f"  wave {c.wave}:"
        versions = f"{c.from_version or '?'} -> {c.to_version}"
        yield (
            f"    {c.namespace}/{c.name}: {c.direction} {versions}, roles in order {', '.join(c.roles)}, "
            f"{len(c.pods)} pod(s), one at a time"
        )
        for i, p in enumerate(c.pods, 1):
            yield f"      {i}. pod {p.pod} (role {p.role})"
            yield from (f"         - {s}" for s in p.steps)
