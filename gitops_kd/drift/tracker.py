"""De-duplication of drift across reconciles: which drifts are new occurrences, still present, or resolved (pure).

An occurrence starts when an object is first seen drifted and ends when it is seen without drift. While it
lasts, a reconcile that shows a field change not seen before in this occurrence (a further edit) starts a
new occurrence (one more alert); fields that disappear (a partial revert) do not. So each out-of-band
edit is alerted once, however many reconciles see it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gitops_kd.drift.model import Drift, FieldChange, ObjectKey


def _signature(change: FieldChange) -> tuple[str, Any]:
    return (change.path, change.actual)


@dataclass(frozen=True)
class Occurrence:
    """One drift occurrence: the drift as first seen and when."""

    drift: Drift
    detected_at: datetime
    seen: frozenset[tuple[str, Any]] = frozenset()


@dataclass(frozen=True)
class Transitions:
    """What one reconcile's detection means: ``new`` occurrences to alert, ``ongoing`` ones (already
    alerted), ``resolved`` ones (object back in sync; the drift as last seen)."""

    new: tuple[Occurrence, ...] = ()
    ongoing: tuple[Occurrence, ...] = ()
    resolved: tuple[Occurrence, ...] = ()


@dataclass
class DriftTracker:
    """Remembers the open occurrence per object. ``update`` is the only mutator; not thread-safe
    (call it from the reconcile worker)."""

    open: dict[ObjectKey, Occurrence] = field(default_factory=dict)

    def update(self, drifts: Iterable[Drift], now: datetime, *, scope: Iterable[ObjectKey] | None = None) -> Transitions:
        """Feed the drifts of one detection. Open occurrences missing from ``drifts`` are resolved — only
        those in ``scope`` when given (objects detection did not look at stay open)."""
        current = {d.key: d for d in drifts}
        new: list[Occurrence] = []
        ongoing: list[Occurrence] = []
        for key, drift in sorted(current.items()):
            sig = frozenset(_signature(c) for c in drift.fields)
            prev = self.open.get(key)
            if prev is None or not sig <= prev.seen:
                occ = Occurrence(drift, now, sig | (prev.seen if prev is not None else frozenset()))
                new.append(occ)
            else:
                occ = Occurrence(drift, prev.detected_at, prev.seen)
                ongoing.append(occ)
            self.open[key] = occ
        in_scope = set(scope) if scope is not None else None
        resolved = [occ for key, occ in sorted(self.open.items()) if key not in current and (in_scope is None or key in in_scope)]
        for occ in resolved:
            del self.open[occ.drift.key]
        return Transitions(tuple(new), tuple(ongoing), tuple(resolved))
