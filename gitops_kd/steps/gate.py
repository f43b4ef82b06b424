"""The gate step kind (spec half): its model, schema fragment (one key per probe kind), parse and describe."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gitops_kd.constants import StallReason
from gitops_kd.steps.exec_probe import ExecProbe
from gitops_kd.steps.http_get import HttpGet
from gitops_kd.steps.probe import Probe
from gitops_kd.steps.probes import PROBES, one_of
from gitops_kd.steps.schema_parts import POSITIVE, ROLES

DEFAULT_GATE_PERIOD = 5
DEFAULT_GATE_TIMEOUT = 600
PATH: tuple[str, ...] = ("gate",)  # where it sits in spec.upgrade
_BOTH = {2: "both"}
SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        **{key: kind.SCHEMA for key, kind in PROBES.items()},
        "periodSeconds": POSITIVE,
        "timeoutSeconds": POSITIVE,
        "roles": ROLES,
    },
}


@dataclass(frozen=True, init=False)
class Gate:
    """App-gated progress: polled after a member is upgraded until it passes or times out.

    ``probe`` is one probe of any kind (steps/probes.py). ``Gate(exec_command, http_get, ...)`` is the older
    positional form, kept for its callers; ``exec_command`` / ``http_get`` read the probe back.
    """

    probe: Probe
    period_seconds: int
    timeout_seconds: int
    roles: tuple[str, ...] | None

    def __init__(
        self,
        exec_command: tuple[str, ...] | None = None,
        http_get: HttpGet | None = None,
        period_seconds: int = DEFAULT_GATE_PERIOD,
        timeout_seconds: int = DEFAULT_GATE_TIMEOUT,
        roles: tuple[str, ...] | None = None,
        *,
        probe: Probe | None = None,
    ) -> None:
        chosen = probe or (ExecProbe(tuple(exec_command)) if exec_command is not None else http_get)
        if chosen is None:
            raise TypeError("a Gate needs a probe")
        object.__setattr__(self, "probe", chosen)
        object.__setattr__(self, "period_seconds", period_seconds)
        object.__setattr__(self, "timeout_seconds", timeout_seconds)
        object.__setattr__(self, "roles", roles)

    @property
    def exec_command(self) -> tuple[str, ...] | None:
        return self.probe.command_argv if isinstance(self.probe, ExecProbe) else None

    @property
    def http_get(self) -> HttpGet | None:
        return self.probe if isinstance(self.probe, HttpGet) else None

    def applies_to(self, role_id: str) -> bool:
        return self.roles is None or role_id in self.roles


def parse(
    raw: Mapping[str, Any] | None, error: Callable[[str], None], roles_of: Callable[[Any], tuple[str, ...] | None]
) -> Gate | None:
    """The gate of spec.upgrade.gate (schema-valid): exactly one probe key (else ``error``), roles checked."""
    if raw is None:
        return None
    given = [key for key in PROBES if key in raw]
    if len(given) != 1:
        error(f"exactly one of {one_of()} is required" + (f", not {_BOTH.get(len(given), len(given))}" if given else ""))
    probe = PROBES[given[0]].parse(raw[given[0]]) if given else None
    roles = roles_of(raw.get("roles"))
    if probe is None:
        return None
    return Gate(
        probe=probe,
        period_seconds=raw.get("periodSeconds", DEFAULT_GATE_PERIOD),
        timeout_seconds=raw.get("timeoutSeconds", DEFAULT_GATE_TIMEOUT),
        roles=roles,
    )


def describe(gate: Gate, pod: str) -> str:
    """The gate as a plan line against ``pod``: its probe, period and timeout."""
    return (
        f"gate: {gate.probe.describe(pod)} every {gate.period_seconds}s until it passes "
        f"(timeout {gate.timeout_seconds}s, else Stalled {StallReason.GATE_TIMEOUT})"
    )
