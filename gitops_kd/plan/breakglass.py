"""left_break_glass: a ClearBreakGlass for each managed object still carrying the break-glass annotation (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.constants import BREAK_GLASS_ANNOTATION
from gitops_kd.kd.layout import KDCLUSTER_KIND, SERVICE_KIND, STATEFULSET_KIND
from gitops_kd.observed import ObservedState
from gitops_kd.plan.actions import ClearBreakGlass
from gitops_kd.spec.state import DesiredState


def left_break_glass(desired: DesiredState, observed: ObservedState) -> list[ClearBreakGlass]:
    """Per KDCluster Git manages (then its role StatefulSets and member Services, by name): the break-glass
    annotation left on it. The request that set it was audited when it was admitted (BreakGlassEdit); left on
    the object it would be a standing marker, so it is removed (docs/security.md)."""
    out: list[ClearBreakGlass] = []
    for key in sorted(desired.clusters):
        live = observed.clusters.get(key)
        if live is None:
            continue
        objects: list[tuple[str, str, Mapping[str, Any]]] = [(KDCLUSTER_KIND, live.name, live.raw)]
        objects += [(STATEFULSET_KIND, s.name, s.raw) for s in sorted(live.statefulsets.values(), key=lambda s: s.name)]
        objects += [(SERVICE_KIND, s.name, s.raw) for s in live.member_services()]
        for kind, name, raw in objects:
            reason = ((raw.get("metadata") or {}).get("annotations") or {}).get(BREAK_GLASS_ANNOTATION)
            if reason is not None:
                out.append(ClearBreakGlass(live.namespace, kind, name, str(reason), live.name))
    return out


__all__ = ["left_break_glass"]
