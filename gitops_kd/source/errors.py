"""SourceError: a commit or repository the Git source refuses, carrying every error found."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - typing only
    from gitops_kd.spec import FieldError


class SourceError(Exception):
    """Raised when a commit cannot be turned into a desired state (or git itself fails)."""

    def __init__(self, message: str, errors: Iterable[FieldError] = ()) -> None:
        self.errors: tuple[FieldError, ...] = tuple(errors)
        lines = [message] + [f"  {err}" for err in self.errors]
        super().__init__("\n".join(lines))
        self.message = message
