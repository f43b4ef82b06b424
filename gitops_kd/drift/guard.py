"""DriftGuard: the planner wrapper that detects drift, alerts once per occurrence and applies the policy.

Drop-in for the controller's planner: ``Controller(..., planner=guard.plan)``. Each call plans with the
real planner, then (unless the plan is refused) detects drift, alerts, and filters out the reverting
actions of alert-only objects. Reverting itself is the planner's level-triggered PatchTemplate /
SetOnDelete / PatchServicePorts / ApplyApp / ApplyCluster.

Baseline: a Git change is not drift. A cluster (app) counts as converging — no drift — until the guard has
seen the planner with nothing to do for it at the desired commit; from then on every owned difference is
an out-of-band change. After a restart, differences present before the first in-sync plan are reverted
as convergence, without a drift alert.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime

from gitops_kd.diff.engine import users_of
from gitops_kd.drift.alert import DriftAlerter
from gitops_kd.drift.detect import detect, upgrade_in_progress
from gitops_kd.drift.model import KDAPP, Drift, ObjectKey
from gitops_kd.drift.policy import REVERT, DriftPolicy, filter_plan
from gitops_kd.drift.rules import IgnoreRules
from gitops_kd.observe.model import ObservedState
from gitops_kd.plan.actions import ApplyApp, Plan
from gitops_kd.spec.state import DesiredState

log = logging.getLogger(__name__)

Key = tuple[str, str]
Planner = Callable[..., Plan]


def _default_planner(desired: DesiredState, observed: ObservedState, *, now: datetime) -> Plan:
    from gitops_kd.plan.planner import plan

    return plan(desired, observed, now=now)


class DriftGuard:
    """Stateful (baselines + open occurrences); call from one reconcile worker at a time."""

    def __init__(self, alerter: DriftAlerter, *, rules: IgnoreRules | None = None, default_policy: str = REVERT,
                 planner: Planner | None = None) -> None:
        self.alerter = alerter
        self.rules = rules if rules is not None else IgnoreRules.defaults()
        self.default_policy = default_policy
        self._planner = planner or _default_planner
        self._clusters: dict[Key, str] = {}  # cluster key -> commit at which it was seen in sync
        self._apps: dict[Key, str] = {}
        self._lock = threading.Lock()
        self.last_drifts: tuple[Drift, ...] = ()
        self.checks = 0  # detections run (one per accepted plan)

    def synced_commit(self, key: Key, *, app: bool = False) -> str | None:
        """The commit at which the cluster (or app) was last seen in sync, or None."""
        with self._lock:
            return (self._apps if app else self._clusters).get(key)

    def plan(self, desired: DesiredState, observed: ObservedState, *, now: datetime) -> Plan:
        """The planner's plan, drift alerted and alert-only reverts removed."""
        base = self._planner(desired, observed, now=now)
        if base.refused:
            return base
        drifts = self.check(desired, observed, base)
        return filter_plan(base, drifts, DriftPolicy.from_desired(desired, self.default_policy))

    def check(self, desired: DesiredState, observed: ObservedState, base: Plan) -> list[Drift]:
        """Update baselines from ``base``, detect, alert; the drifts found."""
        with self._lock:
            self._update_baselines(desired, observed, base)
            clusters, apps = dict(self._clusters), dict(self._apps)

        def busy(key: Key) -> bool:
            return clusters.get(key) != desired.commit

        def app_busy(key: Key) -> bool:
            return apps.get(key) != desired.commit

        drifts = detect(desired, observed, rules=self.rules, in_progress=busy, app_in_progress=app_busy)
        scope = self._scope(desired, observed, busy, app_busy)
        self.alerter.process(drifts, DriftPolicy.from_desired(desired, self.default_policy), scope=scope)
        self.last_drifts = tuple(drifts)
        self.checks += 1
        return drifts

    def _update_baselines(self, desired: DesiredState, observed: ObservedState, base: Plan) -> None:
        for key in desired.clusters:
            if key in observed.clusters and not upgrade_in_progress(desired, observed, key) and \
                    not base.for_cluster(*key):
                if self._clusters.get(key) != desired.commit:
                    log.info("drift baseline: cluster %s/%s in sync at commit %s", *key, desired.commit[:12])
                self._clusters[key] = desired.commit
        pending_apps = {(a.namespace, a.name) for a in base.actions if isinstance(a, ApplyApp)}
        for key in desired.apps:
            users = users_of(desired, observed, key)
            if key in observed.apps and key not in pending_apps and \
                    all(self._clusters.get(c.key) == desired.commit for c in users if c.key in desired.clusters):
                self._apps[key] = desired.commit

    def _scope(self, desired: DesiredState, observed: ObservedState, busy: Callable[[Key], bool],
               app_busy: Callable[[Key], bool]) -> list[ObjectKey]:
        """Open occurrences detection looked at this time (others stay open)."""
        out: list[ObjectKey] = []
        for key, occ in list(self.alerter.tracker.open.items()):
            d = occ.drift
            if d.kind == KDAPP:
                looked = (d.namespace, d.name) not in desired.apps or not app_busy((d.namespace, d.name))
            else:
                ck = d.cluster_key
                looked = ck is None or ck not in desired.clusters or ck not in observed.clusters or (
                    not busy(ck) and not upgrade_in_progress(desired, observed, ck))
            if looked:
                out.append(key)
        return out
