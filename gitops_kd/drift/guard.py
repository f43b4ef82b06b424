"""DriftGuard: the planner wrapper that detects drift, alerts once per occurrence and applies the policy.

Also a post-plan stage (``stage``, controller/stages.py), as the controller runs it. Each call plans with the
real planner, then (unless the plan is refused) detects drift, alerts, and filters out the reverting
actions of alert-only objects. Reverting itself is the planner's level-triggered PatchTemplate /
SetOnDelete / PatchServicePorts / ApplyApp / ApplyCluster.

Baseline: a Git change is not drift. A cluster (app) counts as converging — no drift — until the guard has
seen the planner with nothing to do for it at the desired commit; from then on every owned difference is
an out-of-band change. The guard then records the cluster in sync on its KDRollout (RecordInSync with a
drift.baseline digest), so after a restart a cluster whose recorded digest matches what Git asks now has
its baseline back at once: an edit made while the controller was down is alerted, not silently reverted.
A KDApp without users has no KDRollout to record on: after a restart its differences are convergence.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime

from gitops_kd.diff.engine import users_of
from gitops_kd.drift import baseline
from gitops_kd.drift.alert import DriftAlerter
from gitops_kd.drift.detect import detect, upgrade_in_progress
from gitops_kd.drift.model import Drift, ObjectKey
from gitops_kd.drift.policy import REVERT, DriftPolicy, filter_plan
from gitops_kd.drift.rules import IgnoreRules
from gitops_kd.kd.layout import KDAPP_KIND
from gitops_kd.observe.model import ObservedState
from gitops_kd.plan.actions import ApplyApp, Plan, RecordInSync, waits_last
from gitops_kd.plan.planner import plan
from gitops_kd.spec.state import DesiredState, Key

log = logging.getLogger(__name__)

Planner = Callable[..., Plan]


def _default_planner(desired: DesiredState, observed: ObservedState, *, now: datetime, partial: bool = False) -> Plan:
    return plan(desired, observed, now=now, partial=partial)


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

    def plan(self, desired: DesiredState, observed: ObservedState, *, now: datetime, partial: bool = False) -> Plan:
        """The planner's plan, drift alerted and alert-only reverts removed. ``partial``: ``desired`` is one work
        key's part (plan/focus.py); occurrences outside it are left as they are."""
        base = self._planner(desired, observed, now=now, partial=partial) if partial else \
            self._planner(desired, observed, now=now)
        return self.stage(desired, observed, base, partial=partial)

    def stage(self, desired: DesiredState, observed: ObservedState, base: Plan, *, partial: bool) -> Plan:
        """As a post-plan stage (controller/stages.py): ``base``, the planner's plan made elsewhere, with drift
        alerted and alert-only reverts removed; a refused plan is returned as it is."""
        if base.refused:
            return base
        drifts = self.check(desired, observed, base, partial=partial)
        guarded = filter_plan(base, drifts, DriftPolicy.from_desired(desired, self.default_policy))
        return _with_records(guarded, self._records(desired, observed, base))

    def check(self, desired: DesiredState, observed: ObservedState, base: Plan, *, partial: bool = False) -> list[Drift]:
        """Update baselines from ``base``, detect, alert; the drifts found."""
        with self._lock:
            self._update_baselines(desired, observed, base)
            clusters, apps = dict(self._clusters), dict(self._apps)

        def busy(key: Key) -> bool:
            return clusters.get(key) != desired.commit

        def app_busy(key: Key) -> bool:
            return apps.get(key) != desired.commit

        drifts = detect(desired, observed, rules=self.rules, in_progress=busy, app_in_progress=app_busy)
        scope = self._scope(desired, observed, busy, app_busy, partial)
        self.alerter.process(drifts, DriftPolicy.from_desired(desired, self.default_policy), scope=scope)
        self.last_drifts = tuple(drifts)
        self.checks += 1
        return drifts

    def _update_baselines(self, desired: DesiredState, observed: ObservedState, base: Plan) -> None:
        restored: set[Key] = set()
        for key in desired.clusters:
            if key not in observed.clusters or upgrade_in_progress(desired, observed, key):
                continue
            if self._clusters.get(key) == desired.commit:
                continue
            if not base.for_cluster(*key):
                log.info("drift baseline: cluster %s/%s in sync at commit %s", *key, desired.commit[:12])
                self._clusters[key] = desired.commit
            elif (got := baseline.recorded(observed, key)) is not None and \
                    got == baseline.digest(desired, observed, key):
                log.info("drift baseline: cluster %s/%s restored from its KDRollout (in sync at this spec)", *key)
                self._clusters[key] = desired.commit
                restored.add(key)
        pending_apps = {(a.namespace, a.name) for a in base.actions if isinstance(a, ApplyApp)}
        for key in desired.apps:
            users = [c.key for c in users_of(desired, observed, key) if c.key in desired.clusters]
            if key not in observed.apps or not all(self._clusters.get(c) == desired.commit for c in users):
                continue
            # a pending ApplyApp is convergence, unless a user's recorded digest (which covers the app
            # manifest) shows Git has not changed the app since it was last in sync
            if key not in pending_apps or (users and all(c in restored for c in users)):
                self._apps[key] = desired.commit

    def _records(self, desired: DesiredState, observed: ObservedState, base: Plan) -> list[RecordInSync]:
        """RecordInSync for each cluster in sync now (no action planned) whose KDRollout records another digest."""
        with self._lock:
            synced = [k for k, c in self._clusters.items() if c == desired.commit]
        out: list[RecordInSync] = []
        for key in sorted(synced):
            live = observed.clusters.get(key)
            if live is None or live.rollout is None or base.for_cluster(*key):
                continue
            want = baseline.digest(desired, observed, key)
            if want is not None and want != baseline.recorded(observed, key):
                out.append(RecordInSync(key[0], key[1], want, desired.commit))
        return out

    def _scope(self, desired: DesiredState, observed: ObservedState, busy: Callable[[Key], bool],
               app_busy: Callable[[Key], bool], partial: bool) -> list[ObjectKey]:
        """Open occurrences detection looked at this time (others stay open). A partial desired state looked
        only at its own apps and clusters."""
        out: list[ObjectKey] = []
        for key, occ in list(self.alerter.tracker.open.items()):
            d = occ.drift
            if d.kind == KDAPP_KIND:
                app = (d.namespace, d.name)
                looked = app in desired.apps and not app_busy(app) if partial else \
                    app not in desired.apps or not app_busy(app)
            elif partial:
                ck = d.cluster_key
                looked = ck is not None and ck in desired.clusters and ck in observed.clusters and not busy(ck) \
                    and not upgrade_in_progress(desired, observed, ck)
            else:
                ck = d.cluster_key
                looked = ck is None or ck not in desired.clusters or ck not in observed.clusters or (
                    not busy(ck) and not upgrade_in_progress(desired, observed, ck))
            if looked:
                out.append(key)
        return out


def _with_records(p: Plan, records: list[RecordInSync]) -> Plan:
    """``p`` with ``records`` after its work and before its Waits."""
    if not records:
        return p
    return Plan(waits_last([*p.actions, *records]), p.refusals, p.kept)
