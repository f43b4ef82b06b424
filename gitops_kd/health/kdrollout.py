"""KDRollout health from its kstatus conditions (Ready / Reconciling / Stalled) and observedGeneration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.health._fields import being_deleted, integer, section, text
from gitops_kd.health.model import Health, HealthStatus
from gitops_kd.rollout.model import RolloutStatus


def _is_true(cond: Mapping[str, Any] | None) -> bool:
    return cond is not None and cond.get("status") == "True"


def _condition(status: RolloutStatus, kind: str) -> Mapping[str, Any] | None:
    return next((c for c in status.conditions if c.get("type") == kind), None)


def _say(cond: Mapping[str, Any] | None, fallback: str) -> str:
    cond = cond or {}
    reason, message = text(cond, "reason"), text(cond, "message")
    if reason and message:
        return f"{reason}: {message}"
    return message or reason or fallback


def kdrollout_health(obj: Mapping[str, Any]) -> Health:
    """Health of a gitops-kd.io KDRollout, the kstatus way.

    spec.suspend → Suspended (gitops-kd suspend); status.observedGeneration behind metadata.generation →
    Progressing (the change is not seen yet);
    Stalled=True (or phase Stalled) → Degraded with its reason and message; Reconciling=True → Progressing
    with its message and the current step; Ready=True observed at the current generation → Healthy;
    otherwise Progressing.
    """
    if being_deleted(obj):
        return Health(HealthStatus.PROGRESSING, "Pending deletion")
    recorded = RolloutStatus.from_obj(section(obj, "status"))
    if section(obj, "spec").get("suspend"):
        phase = recorded.phase or ""
        return Health(
            HealthStatus.SUSPENDED,
            "suspended by an operator (`gitops-kd resume` to go on)" + (f"; rollout {phase}" if phase else ""),
        )
    status = section(obj, "status")
    if not status:
        return Health(HealthStatus.PROGRESSING, "Waiting for gitops-kd to report status")
    generation = integer(section(obj, "metadata"), "generation")
    observed = recorded.observed_generation or 0
    if generation and observed < generation:
        return Health(HealthStatus.PROGRESSING, f"Waiting for gitops-kd to observe generation {generation} (observed {observed})")
    stalled = _condition(recorded, "Stalled")
    if _is_true(stalled) or recorded.stalled:
        reason = str(recorded.stalled_reason or "")
        fallback = reason + (": " if reason else "") + (recorded.message or "")
        return Health(HealthStatus.DEGRADED, _say(stalled if _is_true(stalled) else None, fallback or "Stalled"))
    reconciling = _condition(recorded, "Reconciling")
    if _is_true(reconciling):
        step = recorded.step
        message = _say(reconciling, recorded.message or "Reconciling")
        return Health(HealthStatus.PROGRESSING, message + (f" (step: {step})" if step else ""))
    ready = _condition(recorded, "Ready")
    if _is_true(ready):
        ready_generation = integer(ready, "observedGeneration", observed)
        if generation and ready_generation < generation:
            return Health(HealthStatus.PROGRESSING, f"Ready condition is for generation {ready_generation}, not {generation}")
        return Health(HealthStatus.HEALTHY, text(ready or {}, "message") or recorded.message or "")
    return Health(HealthStatus.PROGRESSING, _say(ready, "Waiting for the Ready condition"))
