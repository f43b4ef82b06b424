"""Per-key planning: the part of the desired state one work key needs, and which key owns an action (pure).

A per-cluster reconcile plans one KDCluster with what the cross-cluster rules read about the others:
the KDApps of its app's name (``app_for`` picks the one in its namespace, else the first of that name)
and the clusters of the same app in LOWER waves (the wave gate reads nothing else). An app reconcile
plans the app with every desired cluster using it (EnsureRollout of each comes before ApplyApp).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

from gitops_kd.plan.actions import Action, ApplyApp, ApplyCluster, MarkUpgradable, Prune, SwitchApp
from gitops_kd.spec.state import DesiredState, Key

FLEET = "fleet"
CLUSTER = "cluster"
APP = "app"


@dataclass(frozen=True)
class WorkKey:
    """A key of the controller's work queue: the whole fleet, one KDCluster or one KDApp."""

    kind: str
    key: Key = ("", "")

    def __str__(self) -> str:
        return self.kind if self.kind == FLEET else f"{self.kind}/{self.key[0]}/{self.key[1]}"

    @staticmethod
    def parse(text: str) -> WorkKey:
        kind, _, rest = text.partition("/")
        namespace, _, name = rest.partition("/")
        return WorkKey(kind, (namespace, name)) if kind != FLEET else FLEET_KEY


FLEET_KEY = WorkKey(FLEET)


def cluster_key(key: Key) -> WorkKey:
    return WorkKey(CLUSTER, key)


def app_key(key: Key) -> WorkKey:
    return WorkKey(APP, key)


@dataclass(frozen=True)
class Part:
    """What one key plans: a desired state restricted to it, and what to observe for it."""

    desired: DesiredState
    clusters: frozenset[Key]  # KDClusters to observe (add the live users of ``app_name``)
    app_name: str


@dataclass(frozen=True)
class _Index:
    by_app: Mapping[str, tuple[Key, ...]]  # desired clusters by spec.app, sorted
    apps: Mapping[str, tuple[Key, ...]]  # desired apps by name, sorted


_LAST: list[tuple[DesiredState, _Index]] = []  # the index of the last desired state asked for (one commit at a time)
_LOCK = threading.Lock()


def _index(desired: DesiredState) -> _Index:
    with _LOCK:
        if _LAST and _LAST[0][0] is desired:
            return _LAST[0][1]
    by_app: dict[str, list[Key]] = {}
    for key in sorted(desired.clusters):
        by_app.setdefault(desired.clusters[key].app, []).append(key)
    apps: dict[str, list[Key]] = {}
    for key in sorted(desired.apps):
        apps.setdefault(key[1], []).append(key)
    index = _Index({n: tuple(k) for n, k in by_app.items()}, {n: tuple(k) for n, k in apps.items()})
    with _LOCK:
        _LAST[:] = [(desired, index)]
    return index


def cluster_part(desired: DesiredState, key: Key) -> Part | None:
    """The part of ``desired`` the reconcile of cluster ``key`` plans (None: Git does not have it)."""
    cluster = desired.clusters.get(key)
    if cluster is None:
        return None
    siblings = [k for k in _index(desired).by_app.get(cluster.app, ()) if desired.clusters[k].wave < cluster.wave]
    keys = frozenset([key, *siblings])
    return Part(_restrict(desired, cluster.app, keys), keys, cluster.app)


def users(desired: DesiredState, app_name: str) -> frozenset[Key]:
    """The desired clusters whose spec.app is ``app_name`` (from an index built once per desired state)."""
    return frozenset(_index(desired).by_app.get(app_name, ()))


def app_part(desired: DesiredState, key: Key) -> Part | None:
    """The part of ``desired`` the reconcile of app ``key`` plans: the app and every cluster using its name."""
    if key not in desired.apps:
        return None
    keys = users(desired, key[1])
    return Part(_restrict(desired, key[1], keys), keys, key[1])


def _restrict(desired: DesiredState, app_name: str, clusters: frozenset[Key]) -> DesiredState:
    apps = {k: desired.apps[k] for k in _index(desired).apps.get(app_name, ())}
    return DesiredState(desired.commit, apps, {k: desired.clusters[k] for k in clusters}, desired.subject)


def owner(action: Action) -> WorkKey:
    """The work key whose reconcile executes ``action``: its cluster's, its app's, else the fleet's."""
    if isinstance(action, ApplyApp):
        return app_key((action.namespace, action.name))
    if isinstance(action, ApplyCluster):
        return cluster_key((action.namespace, action.name))
    if isinstance(action, (Prune, MarkUpgradable, SwitchApp)):  # these read the app the cluster leaves: the fleet's
        return FLEET_KEY
    found = action.cluster_key
    return cluster_key(found) if found is not None else FLEET_KEY


__all__ = [
    "APP",
    "CLUSTER",
    "FLEET",
    "FLEET_KEY",
    "Part",
    "WorkKey",
    "app_key",
    "app_part",
    "cluster_key",
    "cluster_part",
    "owner",
    "users",
]
