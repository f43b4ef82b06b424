"""Spec errors: one FieldError per problem (file, field, reason) and SpecError carrying them all."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    """One problem in one file: which field, and why.

    ``file`` is the repo-relative path; ``field`` is a dotted path with indexes
    ("spec.roles[1].id"), "" for the whole document; ``document`` is the 1-based
    index of the YAML document inside a multi-document file (None for single-document files);
    ``line`` and ``column`` (1-based) say where the field is written, when known (spec/positions.py).
    """

    file: str
    field: str
    reason: str
    document: int | None = None
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = self.file if self.document is None else f"{self.file} (document {self.document})"
        if self.field:
            return f"{where}: {self.field}: {self.reason}"
        return f"{where}: {self.reason}"


class SpecError(Exception):
    """Raised when one or more files are invalid; ``errors`` lists every problem found."""

    errors: tuple[FieldError, ...]

    def __init__(self, errors: Iterable[FieldError]) -> None:
        self.errors = tuple(errors)
        if not self.errors:
            raise ValueError("SpecError needs at least one FieldError")
        super().__init__("\n".join(str(e) for e in self.errors))

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)


def join_path(base: str, key: str | int) -> str:
    """Extend a dotted field path: join_path("spec.roles", 1) -> "spec.roles[1]"."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    if not base:
        return key
    if any(c in key for c in "./[] ") or key == "":
        return f"{base}[{key}]"
    return f"{base}.{key}"
