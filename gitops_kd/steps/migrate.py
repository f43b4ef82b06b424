"""The migrate step kind (spec half): the command a persisted dir's `migrate` action runs, its schema and parse."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitops_kd.steps.schema_parts import ARGV, POSITIVE

KIND = "migrate"
DEFAULT_COMMAND_TIMEOUT = 300
SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["command"],
    "properties": {"command": ARGV, "timeoutSeconds": POSITIVE},
}


@dataclass(frozen=True)
class Command:
    """A command run in a member's container (argv, no shell unless the argv asks for one)."""

    command: tuple[str, ...]
    timeout_seconds: int = DEFAULT_COMMAND_TIMEOUT


def parse(raw: Mapping[str, Any]) -> Command:
    """The command of a schema-valid `{migrate: {command, timeoutSeconds?}}`."""
    return Command(tuple(raw["command"]), raw.get("timeoutSeconds", DEFAULT_COMMAND_TIMEOUT))


def subject(directory: str) -> str:
    """The step named in an action line."""
    return f"migration of {directory}"


def describe(directory: str, command: tuple[str, ...], timeout_seconds: int) -> str:
    """One migration as a plan line: its dir, command and timeout."""
    return f"migrate {directory}: {shlex.join(command)} (timeout {timeout_seconds}s)"
