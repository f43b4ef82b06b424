"""Drift policy (revert | alert-only) per object from Git annotations, and the plan filter for alert-only (pure).

The policy is the ``gitops-kd.io/drift-policy`` annotation in Git: on a KubeDirectorCluster it covers the
cluster's StatefulSets, member Services and the KDCluster itself; on a KubeDirectorApp it covers the KDApp
and is the default for the clusters of that app. Otherwise the controller-wide default applies (revert).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gitops_kd.constants import POLICY_ANNOTATION
from gitops_kd.diff.engine import app_for
from gitops_kd.drift.model import Drift
from gitops_kd.kd.layout import KDAPP_KIND
from gitops_kd.plan.actions import ApplyApp, Plan, RecordUnreachable, Wait
from gitops_kd.spec.state import DesiredState, Key

log = logging.getLogger(__name__)

REVERT, ALERT_ONLY = "revert", "alert-only"
MODES = (REVERT, ALERT_ONLY)


def check_mode(value: Any, where: str) -> str:
    """``value`` if it is a policy mode; ValueError naming ``where`` otherwise."""
    if value not in MODES:
        raise ValueError(f"{where}: drift policy must be one of {', '.join(MODES)}, got {value!r}")
    return str(value)


@dataclass(frozen=True)
class DriftPolicy:
    """Resolved policy: per app key and per cluster key (from Git annotations), and the default."""

    default: str = REVERT
    apps: Mapping[Key, str] = field(default_factory=dict)
    clusters: Mapping[Key, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_mode(self.default, "default drift policy")

    @classmethod
    def from_desired(cls, desired: DesiredState, default: str = REVERT) -> DriftPolicy:
        """Read the annotation of every KDApp and KDCluster in Git. A KDCluster without one inherits its
        app's. An invalid value is logged (naming the file) and ignored. The last one is kept for the same desired state
        (the same object): each plan of one commit reads the annotations once."""
        last = _last[0]
        if last is not None and last[0] is desired and last[1] == default:
            return last[2]
        policy = cls._read(desired, default)
        _last[0] = (desired, default, policy)
        return policy

    @classmethod
    def _read(cls, desired: DesiredState, default: str) -> DriftPolicy:
        apps = {k: m for k, a in desired.apps.items() if (m := _mode_of(a.body, a.source)) is not None}
        clusters: dict[Key, str] = {}
        for key, cluster in desired.clusters.items():
            mode = _mode_of(cluster.body, cluster.source)
            if mode is None and (found := app_for(desired, key, cluster)) is not None:
                mode = apps.get(found[0])
            if mode is not None:
                clusters[key] = mode
        return cls(check_mode(default, "default drift policy"), apps, clusters)

    def mode(self, drift: Drift) -> str:
        """The mode for a drifted object."""
        if drift.kind == KDAPP_KIND:
            return self.apps.get((drift.namespace, drift.name), self.default)
        key = drift.cluster_key
        return self.clusters.get(key, self.default) if key is not None else self.default

    def action(self, drift: Drift) -> str:
        """The alert's ``action`` field: "reverted" or "alert-only"."""
        return "reverted" if self.mode(drift) == REVERT else ALERT_ONLY


_last: list[tuple[DesiredState, str, DriftPolicy] | None] = [None]  # the last desired state's policy (one entry)


def _mode_of(body: Mapping[str, Any], source: str) -> str | None:
    value = ((body.get("metadata") or {}).get("annotations") or {}).get(POLICY_ANNOTATION)
    if value is None:
        return None
    try:
        return check_mode(value, f"{source}: metadata.annotations[{POLICY_ANNOTATION}]")
    except ValueError as exc:
        log.warning("%s; using the default", exc)
        return None


def filter_plan(plan: Plan, drifts: Iterable[Drift], policy: DriftPolicy) -> Plan:
    """The plan without the actions that would revert alert-only drift.

    For an alert-only drifted KDApp its ApplyApp is dropped. For an alert-only drifted object of a cluster
    (StatefulSet, Service, KDCluster) every action of that cluster except Wait is dropped — not only the
    PatchTemplate / SetOnDelete / PatchServicePorts / ApplyCluster that revert it, but also the pod
    replacements that would roll the drifted template out; its RecordUnreachable stays (it only records which
    members the drift leaves unreachable). Refused plans are returned unchanged.
    """
    if plan.refused:
        return plan
    frozen_apps: set[Key] = set()
    frozen_clusters: set[Key] = set()
    for d in drifts:
        if policy.mode(d) != ALERT_ONLY:
            continue
        if d.kind == KDAPP_KIND:
            frozen_apps.add((d.namespace, d.name))
        elif d.cluster_key is not None:
            frozen_clusters.add(d.cluster_key)
    if not frozen_apps and not frozen_clusters:
        return plan

    def keep(action: Any) -> bool:
        if isinstance(action, ApplyApp):
            return (action.namespace, action.name) not in frozen_apps
        if isinstance(action, (Wait, RecordUnreachable)):  # a record of what is observed reverts nothing
            return True
        return action.cluster_key not in frozen_clusters

    return Plan(tuple(a for a in plan.actions if keep(a)), plan.refusals, plan.kept)
