"""Scope: the namespaces one controller (shard) manages, and the desired state and plan restricted to them (pure).

A controller plans only the KDClusters and KDApps of its namespaces; objects of other namespaces are
skipped (another shard's, or simply not watched: applying them would repeat every reconcile, since
their result is never observed). A KDCluster in scope whose app lives outside the scope still finds
that app in Git (it stays in the desired state the planner reads, "borrowed"), but this shard never
applies it: a shared app's namespace must belong to exactly one shard.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace

from gitops_kd.diff.engine import app_for
from gitops_kd.kd.layout import KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.plan.actions import ApplyApp
from gitops_kd.plan.result import Plan
from gitops_kd.spec.state import DesiredState, Key

DEFAULT_LEASE = "gitops-kd"


@dataclass(frozen=True)
class Scope:
    """The namespaces managed; ``namespaces`` None means every namespace."""

    namespaces: frozenset[str] | None = None

    @classmethod
    def of(cls, namespace: str | Collection[str] | None) -> Scope:
        """From what Controller/Collector take: None (all), one namespace, or a set of them."""
        if namespace is None:
            return cls(None)
        return cls(frozenset([namespace]) if isinstance(namespace, str) else frozenset(namespace))

    def __contains__(self, namespace: object) -> bool:
        return self.namespaces is None or namespace in self.namespaces

    def describe(self) -> str:
        if self.namespaces is None:
            return "every namespace"
        names = sorted(self.namespaces)
        return f"namespace{'s' if len(names) > 1 else ''} {', '.join(names)}"


@dataclass(frozen=True)
class OutOfScope:
    """A KDApp or KDCluster of the commit in a namespace outside the scope; ``used_by`` is the in-scope
    cluster that reads it as its app (it is then kept in the desired state but never applied)."""

    kind: str
    namespace: str
    name: str
    file: str
    used_by: Key | None = None

    def describe(self, scope: Scope) -> str:
        what = (
            f"{self.kind} {self.namespace}/{self.name} ({self.file}): namespace {self.namespace} is outside "
            f"this controller's scope ({scope.describe()})"
        )
        if self.used_by is None:
            return f"{what}; skipped"
        return (
            f"{what}; read as the app of KDCluster {self.used_by[0]}/{self.used_by[1]} but not applied "
            f"(the shard of {self.namespace} applies it)"
        )


@dataclass(frozen=True)
class Scoped:
    """The desired state restricted to a scope, and what was left out of it."""

    desired: DesiredState
    scope: Scope
    outside: tuple[OutOfScope, ...] = ()

    @property
    def borrowed(self) -> frozenset[Key]:
        """Apps outside the scope kept for the in-scope clusters that use them (never applied)."""
        return frozenset((o.namespace, o.name) for o in self.outside if o.used_by is not None)

    def notes(self) -> tuple[str, ...]:
        return tuple(o.describe(self.scope) for o in self.outside)

    def log_line(self) -> str | None:
        """One line naming each out-of-scope file and its namespace, or None when all is in scope."""
        if not self.outside:
            return None
        files = ", ".join(
            f"{o.file} ({o.namespace}{', app of an in-scope cluster, not applied' if o.used_by else ''})" for o in self.outside
        )
        return (
            f"commit {self.desired.commit[:12]}: {len(self.outside)} object(s) outside this controller's "
            f"scope ({self.scope.describe()}) skipped: {files}"
        )

    def restrict_plan(self, plan: Plan) -> Plan:
        """``plan`` without applying a borrowed app, with the out-of-scope objects as notes (Plan.kept)."""
        borrowed = self.borrowed
        actions = tuple(a for a in plan.actions if not (isinstance(a, ApplyApp) and (a.namespace, a.name) in borrowed))
        if actions == plan.actions and not self.outside:
            return plan
        return replace(plan, actions=actions, kept=plan.kept + self.notes())


def restrict(desired: DesiredState, scope: Scope) -> Scoped:
    """The KDClusters and KDApps of ``desired`` in ``scope``, plus the out-of-scope apps in-scope clusters use."""
    if scope.namespaces is None:
        return Scoped(desired, scope)
    clusters = {k: c for k, c in desired.clusters.items() if k[0] in scope}
    users: dict[Key, Key] = {}
    for key in sorted(clusters):
        found = app_for(desired, key, clusters[key])
        if found is not None and found[0][0] not in scope:
            users.setdefault(found[0], key)
    apps = {k: a for k, a in desired.apps.items() if k[0] in scope or k in users}
    outside = [OutOfScope(KDCLUSTER_KIND, k[0], k[1], c.source) for k, c in sorted(desired.clusters.items()) if k not in clusters]
    outside += [
        OutOfScope(KDAPP_KIND, k[0], k[1], a.source, users.get(k)) for k, a in sorted(desired.apps.items()) if k[0] not in scope
    ]
    outside.sort(key=lambda o: (o.file, o.namespace, o.name))
    if not outside:
        return Scoped(desired, scope)
    return Scoped(replace(desired, apps=apps, clusters=clusters), scope, tuple(outside))


def shard_lease_name(namespaces: Iterable[str], base: str = DEFAULT_LEASE) -> str:
    """A stable Lease name for a shard: ``base`` + "-" + a short hash of its sorted namespaces, so two shards
    left at the default --lease-name never share (and fight over) one Lease."""
    digest = hashlib.sha256(",".join(sorted(set(namespaces))).encode()).hexdigest()[:10]
    return f"{base}-{digest}"
