"""kstatus conditions (Ready / Reconciling / Stalled) on plain status dicts, as fluxcd's runtime/conditions (pure)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

READY, RECONCILING, STALLED = "Ready", "Reconciling", "Stalled"
TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
_STATUSES = (TRUE, FALSE, UNKNOWN)

Conditions = list[dict[str, Any]]


@dataclass(frozen=True)
class Condition:
    """One metav1.Condition."""

    type: str
    status: str
    reason: str
    message: str = ""
    observed_generation: int | None = None

    def __post_init__(self) -> None:
        if self.status not in _STATUSES:
            raise ValueError(f"condition {self.type}: status must be one of {_STATUSES}, got {self.status!r}")
        if not self.reason:
            raise ValueError(f"condition {self.type}: reason must not be empty")


def rfc3339(now: datetime) -> str:
    """A timestamp as Kubernetes writes it: UTC, second precision, trailing Z."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def get(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> dict[str, Any] | None:
    """The condition of this type, or None."""
    for cond in conditions or ():
        if cond.get("type") == type_:
            return dict(cond)
    return None


def is_true(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> bool:
    cond = get(conditions, type_)
    return cond is not None and cond.get("status") == TRUE


def set_condition(conditions: Sequence[Mapping[str, Any]] | None, cond: Condition, now: datetime) -> Conditions:
    """A new list with `cond` set; lastTransitionTime is kept when the status did not change.

    Conditions are kept sorted Ready, Reconciling, Stalled first, then others by type (a stable order
    makes "nothing changed" a plain equality test).
    """
    out: Conditions = []
    previous: Mapping[str, Any] | None = None
    for existing in conditions or ():
        if existing.get("type") == cond.type:
            previous = existing
        else:
            out.append(copy.deepcopy(dict(existing)))
    transition = rfc3339(now)
    if previous is not None and previous.get("status") == cond.status and previous.get("lastTransitionTime"):
        transition = str(previous["lastTransitionTime"])
    new: dict[str, Any] = {
        "type": cond.type,
        "status": cond.status,
        "reason": cond.reason,
        "message": cond.message,
        "lastTransitionTime": transition,
    }
    if cond.observed_generation is not None:
        new["observedGeneration"] = cond.observed_generation
    out.append(new)
    return sorted(out, key=_order)


def delete(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> Conditions:
    """A new list without the condition of this type."""
    return [copy.deepcopy(dict(c)) for c in conditions or () if c.get("type") != type_]


def mark_ready(
    conditions: Sequence[Mapping[str, Any]] | None, reason: str, message: str, *, generation: int | None, now: datetime
) -> Conditions:
    """Ready=True; Reconciling and Stalled removed (kstatus: abnormal-true conditions are absent when fine)."""
    out = set_condition(conditions, Condition(READY, TRUE, reason, message, generation), now)
    return delete(delete(out, RECONCILING), STALLED)


def mark_reconciling(
    conditions: Sequence[Mapping[str, Any]] | None, reason: str, message: str, *, generation: int | None, now: datetime
) -> Conditions:
    """Reconciling=True and Ready=False with the same reason and message; Stalled removed."""
    out = set_condition(conditions, Condition(RECONCILING, TRUE, reason, message, generation), now)
    out = set_condition(out, Condition(READY, FALSE, reason, message, generation), now)
    return delete(out, STALLED)


def mark_stalled(
    conditions: Sequence[Mapping[str, Any]] | None, reason: str, message: str, *, generation: int | None, now: datetime
) -> Conditions:
    """Stalled=True and Ready=False with the same reason and message; Reconciling removed."""
    out = set_condition(conditions, Condition(STALLED, TRUE, reason, message, generation), now)
    out = set_condition(out, Condition(READY, FALSE, reason, message, generation), now)
    return delete(out, RECONCILING)


def _order(cond: Mapping[str, Any]) -> tuple[int, str]:
    priority = {READY: 0, RECONCILING: 1, STALLED: 2}
    kind = str(cond.get("type", ""))
    return priority.get(kind, 3), kind
