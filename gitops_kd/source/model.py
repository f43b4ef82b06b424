"""Value objects of the Git source: a change set and a poll result (the desired state lives in spec)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitops_kd.spec.state import DesiredState, Key

if TYPE_CHECKING:  # pragma: no cover - typing only
    from gitops_kd.spec import FieldError


@dataclass(frozen=True)
class ChangeSet:
    """What changed between two commits: repo paths that matter, and the app/cluster keys touched."""

    added: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    apps_changed: frozenset[Key] = frozenset()
    clusters_changed: frozenset[Key] = frozenset()

    @property
    def empty(self) -> bool:
        """True when no relevant path and no app or cluster changed."""
        return not (self.added or self.modified or self.deleted or self.renamed or self.apps_changed or self.clusters_changed)

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path present at the new commit that was added, modified or renamed to."""
        return self.added + self.modified + tuple(new for _, new in self.renamed)


@dataclass(frozen=True)
class PollResult:
    """The outcome of one poll: the head commit, whether it is new, and the desired state to use.

    When the commit is refused (`accepted` False) `errors` names every bad file and `desired`
    is the last good desired state (None if there never was one).
    """

    commit: str
    changed: bool
    desired: DesiredState | None
    changes: ChangeSet
    errors: tuple[FieldError, ...]
    accepted: bool


__all__ = ["ChangeSet", "DesiredState", "Key", "PollResult"]
