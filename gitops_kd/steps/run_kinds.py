"""The registry of step kinds run as a command in a member (RunStep.kind -> the kind's spec half)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from gitops_kd.steps import hook, migrate


class RunKind(Protocol):
    """A RunStep kind's spec half: its name and how an action line names one step of it."""

    KIND: str

    def subject(self, directory: str) -> str:
        """The step named in an action line ("migration of /var/lib/x", "postUpgrade hook")."""
        ...


RUN_KINDS: Mapping[str, RunKind] = {kind.KIND: kind for kind in (migrate, hook)}
