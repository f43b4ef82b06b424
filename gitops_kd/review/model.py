"""Value objects of a review: per app the version change and its verdict, per cluster what a rollout does."""

from __future__ import annotations

from dataclasses import dataclass

from gitops_kd.diff.rollback import Rollback
from gitops_kd.spec.state import Key


@dataclass(frozen=True)
class DirRule:
    """What happens to one persisted directory: keep | discard | migrate (with its command) | restore."""

    directory: str
    action: str
    command: tuple[str, ...] | None = None
    timeout_seconds: int | None = None


@dataclass(frozen=True)
class RoleReview:
    """One role of a cluster, in upgrade order: members, pods replaced, data rules, and which steps run."""

    role: str
    members: int
    replaced: int
    dirs: tuple[DirRule, ...]
    storage: bool
    hook: bool
    gate: bool


@dataclass(frozen=True)
class PortChange:
    """A member Service's ports change: ``before``/``after`` as (name, port) pairs; ``members``: the ordinals of
    the members whose own Service changes, in the order their pods are replaced (each Service moves with its pod)."""

    role: str
    services: int
    before: tuple[tuple[str, int], ...]
    after: tuple[tuple[str, int], ...]
    members: tuple[int, ...] = ()


@dataclass(frozen=True)
class Step:
    """A command the rollout runs (hook, gate) and where: ``detail`` is the command or the HTTP probe."""

    detail: str
    timeout_seconds: int
    roles: tuple[str, ...] | None
    period_seconds: int | None = None


@dataclass(frozen=True)
class AppReview:
    """A desired app against what runs: ``verdict`` says whether the stanza's rules allow the change."""

    key: Key
    file: str
    before: str | None
    after: str | None
    direction: str
    allowed: bool
    verdict: str
    changes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClusterReview:
    """What happens to one cluster: created, unchanged, or a rollout (upgrade, downgrade, rebuild)."""

    key: Key
    file: str
    app: str
    wave: int
    state: str  # create | rollout | in-sync | update | removed
    direction: str | None = None
    from_version: str | None = None
    to_version: str | None = None
    roles: tuple[RoleReview, ...] = ()
    hook: Step | None = None
    gate: Step | None = None
    failure_policy: str | None = None
    pod_ready_timeout_seconds: int | None = None
    ports: tuple[PortChange, ...] = ()
    changes: tuple[str, ...] = ()
    estimate_seconds: int = 0
    rollback: Rollback | None = None  # an upgrade: whether `git revert` of the merge would roll it back

    @property
    def replaced(self) -> int:
        return sum(r.replaced for r in self.roles)


@dataclass(frozen=True)
class Refused:
    """A refusal: the whole change is refused and nothing is applied."""

    file: str
    field: str
    reason: str


@dataclass(frozen=True)
class Review:
    """Everything merging ``head`` would do, compared against ``against`` (the base revision or a cluster)."""

    base: str
    head: str
    against: str
    refusals: tuple[Refused, ...]
    apps: tuple[AppReview, ...]
    clusters: tuple[ClusterReview, ...]
    notes: tuple[str, ...] = ()
    estimate_seconds: int = 0
    rollback: Rollback | None = None  # an upgrade: whether `git revert` of the merge would roll it back

    @property
    def refused(self) -> bool:
        return bool(self.refusals)

    @property
    def replaced(self) -> int:
        return sum(c.replaced for c in self.clusters)
