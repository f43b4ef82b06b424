"""The exec probe of a gate: a command run in the member's container, passing on exit code 0."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KEY = "exec"
SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["command"],
    "properties": {"command": {"type": "array", "minItems": 1, "items": {"type": "string"}}},
}


@dataclass(frozen=True)
class ExecProbe:
    """An argv run in the member's app container (no shell unless the argv asks for one)."""

    command_argv: tuple[str, ...]
    how = "exec"

    def describe(self, pod: str) -> str:
        return shlex.join(self.command_argv)

    def command(self) -> list[str]:
        return list(self.command_argv)


def parse(raw: Mapping[str, Any]) -> ExecProbe:
    """The probe of spec.upgrade.gate.exec."""
    return ExecProbe(tuple(raw["command"]))
