"""The desired state: every KDApp and KDCluster one accepted commit declares (a pure value object)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - typing only
    from gitops_kd.spec.model import KDApp, KDCluster

Key = tuple[str, str]
"""(namespace, name) with the default namespace filled in."""


def _frozen(mapping: Mapping[Key, object]) -> Mapping[Key, object]:
    return mapping if isinstance(mapping, MappingProxyType) else MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class DesiredState:
    """Every KDApp and KDCluster declared by one accepted commit, keyed by (namespace, name); ``subject`` is the
    first line of the commit's message ("" when not read), recorded with each rollout it starts."""

    commit: str
    apps: Mapping[Key, KDApp] = field(default_factory=dict)
    clusters: Mapping[Key, KDCluster] = field(default_factory=dict)
    subject: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "apps", _frozen(self.apps))
        object.__setattr__(self, "clusters", _frozen(self.clusters))

    __hash__ = None  # type: ignore[assignment]  # holds mappings

    @cached_property
    def first_app_named(self) -> Mapping[str, Key]:
        """Per app name, the key of the first KDApp of that name in (namespace, name) order (built once per state:
        each cluster's and app's lookup costs a dict read, not a sort of every app)."""
        first: dict[str, Key] = {}
        for key in sorted(self.apps):
            first.setdefault(key[1], key)
        return MappingProxyType(first)
