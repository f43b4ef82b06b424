"""The postUpgrade hook step kind (spec half): its model, schema fragment, parse and describe."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gitops_kd.steps.migrate import DEFAULT_COMMAND_TIMEOUT
from gitops_kd.steps.schema_parts import ARGV, POSITIVE, ROLES

KIND = "hook"
PATH: tuple[str, ...] = ("hooks", "postUpgrade")  # where it sits in spec.upgrade
SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["command"],
    "properties": {"command": ARGV, "timeoutSeconds": POSITIVE, "roles": ROLES},
}

RolesOf = Callable[[Any], "tuple[str, ...] | None"]  # checks a roles list (reports at its path)


@dataclass(frozen=True)
class Hook:
    """A command run in each upgraded member (of ``roles``, or all roles when None)."""

    command: tuple[str, ...]
    timeout_seconds: int = DEFAULT_COMMAND_TIMEOUT
    roles: tuple[str, ...] | None = None

    def applies_to(self, role_id: str) -> bool:
        return self.roles is None or role_id in self.roles


def parse(raw: Mapping[str, Any] | None, error: Callable[[str], None], roles_of: RolesOf) -> Hook | None:
    """The hook of spec.upgrade.hooks.postUpgrade (schema-valid); ``roles_of`` checks its roles."""
    if raw is None:
        return None
    return Hook(
        command=tuple(raw["command"]),
        timeout_seconds=raw.get("timeoutSeconds", DEFAULT_COMMAND_TIMEOUT),
        roles=roles_of(raw.get("roles")),
    )


def subject(directory: str) -> str:
    """The step named in an action line (a hook is for no dir)."""
    return "postUpgrade hook"


def detail(hook: Hook) -> str:
    """What the hook runs, as a reviewer reads it (its argv, shell-quoted)."""
    return shlex.join(hook.command)


def describe(hook: Hook) -> str:
    """The hook as a plan line: its command and timeout."""
    return f"postUpgrade hook: {detail(hook)} (timeout {hook.timeout_seconds}s)"
