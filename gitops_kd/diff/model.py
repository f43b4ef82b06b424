"""Value objects of a diff: per-app version and field changes, per-cluster template/port changes (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from gitops_kd.spec.state import Key
from gitops_kd.spec.upgrade import PersistRules, UpgradeSpec

CREATE, UPGRADE, DOWNGRADE, EQUAL = "create", "upgrade", "downgrade", "equal"
ADOPT = "adopt"  # a rollout direction besides UPGRADE / DOWNGRADE: take over a live cluster at the desired version
REBUILD = "rebuild"  # same version, but pods that do not run its image: replaced one at a time, no migration or hook


@dataclass(frozen=True)
class Refusal:
    """A forbidden change: the commit is refused. ``file`` is the repo path, ``field`` the spec field."""

    file: str
    field: str
    reason: str

    def describe(self) -> str:
        return f"{self.file}: {self.field}: {self.reason}"


@dataclass(frozen=True)
class FieldChange:
    """One classified change: ``field`` is image | env | resources | ports | persistDirs | cardinality |
    members | storage; ``role`` the role id (None for app-wide); ``old``/``new`` as written (None = absent)."""

    role: str | None
    field: str
    old: Any
    new: Any

    def describe(self) -> str:
        where = f"role {self.role}: " if self.role else ""
        return f"{where}{self.field}: {self.old!r} -> {self.new!r}"


@dataclass(frozen=True)
class Transition:
    """The version change a cluster's data goes through.

    ``direction``: upgrade | downgrade | adopt (no version change known). ``rules`` are the per-dir
    data actions (a ``from`` rule of the target's stanza, or a ``downgrade.to`` rule of the stanza of
    the version being left); ``stanza`` gives role order, hooks, gate and timeouts (the target's);
    ``left_stanza`` is the stanza of the version being left (kept in the rollout for downgrades).
    """

    direction: str
    from_version: str | None
    target_version: str
    rules: PersistRules | None
    stanza: UpgradeSpec | None
    left_stanza: UpgradeSpec | None = None


@dataclass(frozen=True)
class AppDiff:
    """A desired KDApp against the live one. ``direction`` is create | upgrade | downgrade | equal;
    ``needs_apply`` is True when the live object does not carry the desired manifest."""

    key: Key
    source: str
    live_version: str | None
    desired_version: str
    direction: str
    needs_apply: bool
    changes: tuple[FieldChange, ...] = ()


@dataclass(frozen=True)
class RoleDiff:
    """A role StatefulSet whose pod template lacks owned fields (``fields``: owned_differences paths)."""

    role: str
    statefulset: str
    fields: tuple[str, ...]


@dataclass(frozen=True)
class PortsDiff:
    """A member Service whose ports differ from the desired ones."""

    service: str
    role: str
    ports: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class ClusterDiff:
    """A desired KDCluster against the live one: missing (``exists`` False), spec to update, templates
    and member Service ports that differ, and the cluster-level field changes."""

    key: Key
    source: str
    app: Key | None
    exists: bool
    needs_apply: bool
    transition: Transition | None = None
    roles: tuple[RoleDiff, ...] = ()
    ports: tuple[PortsDiff, ...] = ()
    changes: tuple[FieldChange, ...] = ()

    @property
    def in_sync(self) -> bool:
        return self.exists and not self.needs_apply and not self.roles and not self.ports


@dataclass(frozen=True)
class DiffReport:
    """Everything that differs; ``refusals`` non-empty means the commit is refused as a whole."""

    apps: tuple[AppDiff, ...] = ()
    clusters: tuple[ClusterDiff, ...] = ()
    refusals: tuple[Refusal, ...] = ()

    @property
    def refused(self) -> bool:
        return bool(self.refusals)

    def app(self, key: Key) -> AppDiff | None:
        return self._apps_by_key.get(key)

    def cluster(self, key: Key) -> ClusterDiff | None:
        return self._clusters_by_key.get(key)

    @cached_property
    def _apps_by_key(self) -> dict[Key, AppDiff]:
        out: dict[Key, AppDiff] = {}
        for a in self.apps:
            out.setdefault(a.key, a)
        return out

    @cached_property
    def _clusters_by_key(self) -> dict[Key, ClusterDiff]:
        out: dict[Key, ClusterDiff] = {}
        for c in self.clusters:
            out.setdefault(c.key, c)
        return out

    def describe(self) -> str:
        lines = [f"refused: {r.describe()}" for r in self.refusals]
        for a in self.apps:
            head = f"app {a.key[0]}/{a.key[1]}: {a.direction} {a.live_version or '-'} -> {a.desired_version}"
            lines.append(head + ("" if a.needs_apply else " (live object up to date)"))
            lines += [f"  {c.describe()}" for c in a.changes]
        for c in self.clusters:
            state = "missing" if not c.exists else "in sync" if c.in_sync else "differs"
            lines.append(f"cluster {c.key[0]}/{c.key[1]}: {state}")
            lines += [f"  {ch.describe()}" for ch in c.changes]
            lines += [
                f"  role {r.role} ({r.statefulset}): pod template differs in {len(r.fields)} owned field(s)" for r in c.roles
            ]
            lines += [f"  service {p.service}: ports -> [{', '.join(f'{n}:{port}' for n, port in p.ports)}]" for p in c.ports]
        return "\n".join(lines) if lines else "no differences"
