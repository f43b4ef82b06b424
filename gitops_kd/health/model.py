"""Health value objects: the status codes, a (status, message) pair, and worst-of aggregation."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class HealthStatus(str, enum.Enum):
    """How healthy one object (or a set of objects) is; the values are gitops-engine's status codes."""

    HEALTHY = "Healthy"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"
    SUSPENDED = "Suspended"
    MISSING = "Missing"
    UNKNOWN = "Unknown"

    def __str__(self) -> str:
        return self.value


# Least to most severe. Unlike gitops-engine (which ranks Unknown last), an object whose health
# cannot be assessed must not hide a Degraded or Progressing one, so Unknown ranks just above Healthy.
SEVERITY: tuple[HealthStatus, ...] = (
    HealthStatus.HEALTHY,
    HealthStatus.UNKNOWN,
    HealthStatus.SUSPENDED,
    HealthStatus.PROGRESSING,
    HealthStatus.MISSING,
    HealthStatus.DEGRADED,
)
_RANK = {status: i for i, status in enumerate(SEVERITY)}


@dataclass(frozen=True)
class Health:
    """The assessed health of one object: a status and a human message (may be empty)."""

    status: HealthStatus
    message: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"status": self.status.value, "message": self.message}


def is_worse(current: HealthStatus, new: HealthStatus) -> bool:
    """True when `new` is a worse condition than `current` (gitops-engine's IsWorse, with SEVERITY)."""
    return _RANK[new] > _RANK[current]


def worst(healths: Iterable[Health]) -> Health:
    """The first of the most severe healths; Healthy with no message when there are none."""
    result = Health(HealthStatus.HEALTHY)
    first = True
    for health in healths:
        if first or is_worse(result.status, health.status):
            result = health
            first = False
    return result
