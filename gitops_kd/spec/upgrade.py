"""Value objects of the upgrade stanza (spec.upgrade): order, data rules, hooks, gate, policy."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import semver

from gitops_kd.spec.freeze import FrozenMap, thaw
from gitops_kd.spec.persist import is_within
from gitops_kd.spec.version import VersionRange
from gitops_kd.steps.exec_probe import ExecProbe
from gitops_kd.steps.http_get import HttpGet
from gitops_kd.steps.probe import Probe

if TYPE_CHECKING:
    from gitops_kd.spec.model import KDApp

KEEP, DISCARD, MIGRATE, RESTORE = "keep", "discard", "migrate", "restore"
HALT, REVERT_COMMIT = "halt", "revert-commit"

DEFAULT_COMMAND_TIMEOUT = 300
DEFAULT_GATE_PERIOD = 5
DEFAULT_GATE_TIMEOUT = 600
DEFAULT_POD_READY_TIMEOUT = 600


@dataclass(frozen=True)
class Command:
    """A command run in a member's container (argv, no shell unless the argv asks for one)."""

    command: tuple[str, ...]
    timeout_seconds: int = DEFAULT_COMMAND_TIMEOUT


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
        return tuple(
            (d, a) for d, a in sorted(self.persist_dirs.items()) if d != directory and is_within(d, directory)
        )


@dataclass(frozen=True)
class UpgradeFrom(PersistRules):
    """spec.upgrade.from[]: applies when upgrading from a version in ``versions``."""


@dataclass(frozen=True)
class DowngradeTo(PersistRules):
    """spec.upgrade.downgrade.to[]: applies when going back to a version in ``versions``."""


@dataclass(frozen=True)
class Hook:
    """A command run in each upgraded member (of ``roles``, or all roles when None)."""

    command: tuple[str, ...]
    timeout_seconds: int = DEFAULT_COMMAND_TIMEOUT
    roles: tuple[str, ...] | None = None

    def applies_to(self, role_id: str) -> bool:
        return self.roles is None or role_id in self.roles


@dataclass(frozen=True, init=False)
class Gate:
    """App-gated progress: polled after a member is upgraded until it passes or times out.

    ``probe`` is one probe of any kind (gitops_kd/steps/probes.py). ``Gate(exec_command, http_get, ...)`` is the
    older positional form, kept for its callers; ``exec_command`` / ``http_get`` read the probe back.
    """

    probe: Probe
    period_seconds: int
    timeout_seconds: int
    roles: tuple[str, ...] | None

    def __init__(self, exec_command: tuple[str, ...] | None = None, http_get: HttpGet | None = None,
                 period_seconds: int = DEFAULT_GATE_PERIOD, timeout_seconds: int = DEFAULT_GATE_TIMEOUT,
                 roles: tuple[str, ...] | None = None, *, probe: Probe | None = None) -> None:
        chosen = probe or (ExecProbe(tuple(exec_command)) if exec_command is not None else http_get)
        if chosen is None:
            raise TypeError("a Gate needs a probe")
        object.__setattr__(self, "probe", chosen)
        object.__setattr__(self, "period_seconds", period_seconds)
        object.__setattr__(self, "timeout_seconds", timeout_seconds)
        object.__setattr__(self, "roles", roles)

    @property
    def exec_command(self) -> tuple[str, ...] | None:
        return self.probe.command_argv if isinstance(self.probe, ExecProbe) else None

    @property
    def http_get(self) -> HttpGet | None:
        return self.probe if isinstance(self.probe, HttpGet) else None

    def applies_to(self, role_id: str) -> bool:
        return self.roles is None or role_id in self.roles


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


