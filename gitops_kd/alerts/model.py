"""Alert: what one condition (a drift, a stall, a refused commit, Git unreadable) says, firing or resolved."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from gitops_kd.drift.alert import RESOLVED

DRIFT, STALL, REFUSED_COMMIT, GIT_HEALTH = "drift", "stall", "refused-commit", "git-health"
SOURCES = (DRIFT, STALL, REFUSED_COMMIT, GIT_HEALTH)
INFO, WARNING, CRITICAL = "info", "warning", "critical"
SEVERITIES = (INFO, WARNING, CRITICAL)  # in increasing order
FIRING = "firing"  # the other state is RESOLVED (drift.alert's, the drift payload's word)


@dataclass(frozen=True)
class Subject:
    """The object an alert is about."""

    kind: str
    namespace: str
    name: str


@dataclass(frozen=True)
class Alert:
    """One alert; ``fingerprint`` is stable across the firing and the resolve of the same condition."""

    source: str
    severity: str
    subject: Subject
    message: str
    labels: Mapping[str, str] = field(default_factory=dict)
    state: str = FIRING
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    details: Mapping[str, Any] | None = None  # the source's own payload (drift: the drift webhook's body)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"alert source {self.source!r}: must be one of {', '.join(SOURCES)}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"alert severity {self.severity!r}: must be one of {', '.join(SEVERITIES)}")

    @property
    def fingerprint(self) -> str:
        """Source, subject and labels: the same condition on the same object has the same fingerprint."""
        key = "|".join(
            [
                self.source,
                self.subject.kind,
                self.subject.namespace,
                self.subject.name,
                *(f"{k}={v}" for k, v in sorted(self.labels.items())),
            ]
        )
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    def resolved(self, at: datetime, message: str | None = None, details: Mapping[str, Any] | None = None) -> Alert:
        """The resolve of this alert, ended at ``at``."""
        return replace(
            self,
            state=RESOLVED,
            ends_at=at,
            message=message or self.message,
            details=details if details is not None else self.details,
        )


def stamp(when: datetime | None) -> str | None:
    """RFC 3339 in UTC (second precision), or None."""
    return None if when is None else when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def at_least(severity: str, minimum: str) -> bool:
    """``severity`` is ``minimum`` or more severe."""
    return SEVERITIES.index(severity) >= SEVERITIES.index(minimum)
