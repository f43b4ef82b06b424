"""Value objects of the upgrade stanza (spec.upgrade): order, data rules, policy; hooks and gate from gitops_kd/steps/."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import semver

from gitops_kd.spec.freeze import FrozenMap, thaw
from gitops_kd.spec.persist import is_within
from gitops_kd.spec.version import VersionRange
from gitops_kd.steps.gate import DEFAULT_GATE_PERIOD, DEFAULT_GATE_TIMEOUT, Gate
from gitops_kd.steps.hook import Hook
from gitops_kd.steps.http_get import HttpGet
from gitops_kd.steps.migrate import DEFAULT_COMMAND_TIMEOUT, Command

if TYPE_CHECKING:
    from gitops_kd.spec.model import KDApp

KEEP, DISCARD, MIGRATE, RESTORE = "keep", "discard", "migrate", "restore"
HALT, REVERT_COMMIT = "halt", "revert-commit"

DEFAULT_POD_READY_TIMEOUT = 600
__all__ = [
    "DEFAULT_COMMAND_TIMEOUT",
    "DEFAULT_GATE_PERIOD",
    "DEFAULT_GATE_TIMEOUT",
    "DEFAULT_POD_READY_TIMEOUT",
    "DISCARD",
    "HALT",
    "KEEP",
    "MIGRATE",
    "RESTORE",
    "REVERT_COMMIT",
    "Command",
    "DirAction",
    "DowngradeTo",
    "Gate",
    "Hook",
    "HttpGet",
    "PersistRules",
    "UpgradeFrom",
    "UpgradeSpec",
    "order_roles",
]


@dataclass(frozen=True)
class DirAction:
    """What to do with one persisted dir: keep | discard | migrate (with its command) | restore."""

    action: str
    migrate: Command | None = None


@dataclass(frozen=True)
class PersistRules:
    """A version range and the per-dir data actions that apply when it matches."""

    versions: VersionRange
    persist_dirs: FrozenMap[str, DirAction]
    default: str = KEEP

    def action_for(self, directory: str) -> DirAction:
        """The action for a persisted dir: the most specific listed dir covering it, else default.

        Listed dirs below ``directory`` do not apply to it as a whole; see ``actions_within``.
        """
        best: str | None = None
        for listed in self.persist_dirs:
            if is_within(directory, listed) and (best is None or len(listed) > len(best)):
                best = listed
        return self.persist_dirs[best] if best is not None else DirAction(self.default)

    def actions_within(self, directory: str) -> tuple[tuple[str, DirAction], ...]:
        """Listed dirs strictly below ``directory`` (finer rules inside a persisted dir), sorted."""
        return tuple((d, a) for d, a in sorted(self.persist_dirs.items()) if d != directory and is_within(d, directory))


@dataclass(frozen=True)
class UpgradeFrom(PersistRules):
    """spec.upgrade.from[]: applies when upgrading from a version in ``versions``."""


@dataclass(frozen=True)
class DowngradeTo(PersistRules):
    """spec.upgrade.downgrade.to[]: applies when going back to a version in ``versions``."""


@dataclass(frozen=True)
class UpgradeSpec:
    """The whole upgrade stanza of one app version. ``raw`` is the stanza as written."""

    role_order: tuple[str, ...] = ()
    upgrade_from: tuple[UpgradeFrom, ...] = ()
    downgrade_to: tuple[DowngradeTo, ...] | None = None
    post_upgrade: Hook | None = None
    gate: Gate | None = None
    pod_ready_timeout_seconds: int = DEFAULT_POD_READY_TIMEOUT
    failure_policy: str = HALT
    raw: FrozenMap[str, Any] = field(default_factory=FrozenMap, repr=False, compare=False)

    def rule_for_upgrade_from(self, version: semver.Version | str) -> UpgradeFrom | None:
        """The first from[] rule whose range contains the old version, or None (upgrade refused)."""
        return next((r for r in self.upgrade_from if r.versions.contains(version)), None)

    def rule_for_downgrade_to(self, version: semver.Version | str) -> DowngradeTo | None:
        """The first downgrade.to[] rule whose range contains the target version, or None (refused)."""
        return next((r for r in self.downgrade_to or () if r.versions.contains(version)), None)

    def ordered_roles(self, app: KDApp) -> tuple[str, ...]:
        """The app's role ids in upgrade order: roleOrder first, then the others in spec order."""
        return order_roles(self.role_order, app.role_ids)

    def to_annotation(self) -> str:
        """The stanza as written, as compact JSON (the gitops-kd.io/upgrade annotation value)."""
        from gitops_kd.spec.model import compact_json

        return compact_json(thaw(self.raw))

    @classmethod
    def from_annotation(cls, text: str, source: str = "annotation gitops-kd.io/upgrade") -> UpgradeSpec:
        """Read a stanza back from the annotation; raises SpecError naming ``source`` if invalid."""
        from gitops_kd.spec.upgrade_parse import parse_annotation

        return parse_annotation(text, source)


def order_roles(role_order: Iterable[str], role_ids: Iterable[str]) -> tuple[str, ...]:
    """roleOrder entries first (those that are roles), then the remaining roles in spec order."""
    ids = list(role_ids)
    first = [r for r in role_order if r in ids]
    return tuple(first + [r for r in ids if r not in first])
