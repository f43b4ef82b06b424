"""Value objects of the Git source: the desired state, a change set and a poll result."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:  # pragma: no cover - typing only
    from gitops_kd.spec import FieldError, KDApp, KDCluster

Key = tuple[str, str]
"""(namespace, name) with the default namespace filled in."""


def _frozen(mapping: Mapping[Key, object]) -> Mapping[Key, object]:
    return mapping if isinstance(mapping, MappingProxyType) else MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class DesiredState:
    """Every KDApp and KDCluster declared by one accepted commit, keyed by (namespace, name)."""

    commit: str
    apps: Mapping[Key, "KDApp"] = field(default_factory=dict)
    clusters: Mapping[Key, "KDCluster"] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "apps", _frozen(self.apps))
        object.__setattr__(self, "clusters", _frozen(self.clusters))

    __hash__ = None  # type: ignore[assignment]  # holds mappings


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
        return not (self.added or self.modified or self.deleted or self.renamed
                    or self.apps_changed or self.clusters_changed)

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
    desired: "DesiredState | None"
    changes: ChangeSet
    errors: tuple["FieldError", ...]
    accepted: bool
