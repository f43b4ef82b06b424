"""DriftGuard: holds the drift baselines between plans, runs the pure classify stage, hands its report on.

``stage(desired, observed, plan, *, partial)`` is the post-plan stage: it receives the plan the pure planner
made, classifies it (drift/classify.py), keeps the new baselines, gives the report's transitions to the
DriftAlerter (Events, metrics, log, the drift webhook) and to ``on_report`` (the alerts edge), and returns the
filtered plan. ``plan(...)`` is the older planner wrapper (planner, then stage) for callers that still give
the Controller a planner. Reverting itself is the planner's level-triggered actions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime

from gitops_kd.drift.alert import DriftAlerter
from gitops_kd.drift.classify import Baselines, DriftReport, classify
from gitops_kd.drift.model import Drift
from gitops_kd.drift.policy import REVERT
from gitops_kd.drift.rules import IgnoreRules
from gitops_kd.observed import ObservedState
from gitops_kd.plan.actions import Plan
from gitops_kd.plan.planner import plan
from gitops_kd.spec.state import DesiredState, Key

Planner = Callable[..., Plan]


def _default_planner(desired: DesiredState, observed: ObservedState, *, now: datetime, partial: bool = False) -> Plan:
    return plan(desired, observed, now=now, partial=partial)


class DriftGuard:
    """The baselines' holder; thread-safe (one classification at a time, under its own lock)."""

    def __init__(
        self,
        alerter: DriftAlerter,
        *,
        rules: IgnoreRules | None = None,
        default_policy: str = REVERT,
        planner: Planner | None = None,
        on_report: Callable[[DriftReport, ObservedState], None] | None = None,
    ) -> None:
        self.alerter = alerter
        self.rules = rules if rules is not None else IgnoreRules.defaults()
        self.default_policy = default_policy
        self.on_report = on_report
        self._planner = planner or _default_planner
        self.baselines = Baselines()
        self._lock = threading.Lock()
        self.last_drifts: tuple[Drift, ...] = ()
        self.checks = 0  # classifications run (one per accepted plan)

    def synced_commit(self, key: Key, *, app: bool = False) -> str | None:
        """The commit at which the cluster (or app) was last seen in sync, or None."""
        with self._lock:
            return (self.baselines.apps if app else self.baselines.clusters).get(key)

    @property
    def active(self) -> tuple[Drift, ...]:
        """The drifts currently open (as last seen)."""
        with self._lock:
            return tuple(o.drift for _, o in sorted(self.baselines.open.items()))

    def stage(self, desired: DesiredState, observed: ObservedState, plan: Plan, *, partial: bool = False) -> Plan:
        """The post-plan drift stage: ``plan`` classified, drift alerted, alert-only reverts removed."""
        if plan.refused:
            return plan
        with self._lock:
            out, report = classify(
                plan,
                observed,
                self.baselines,
                desired=desired,
                now=self.alerter.now(),
                rules=self.rules,
                default_policy=self.default_policy,
                partial=partial,
            )
            self.baselines = report.baselines
            self.last_drifts = report.drifts
            self.checks += 1
        self.alerter.emit(report.transitions, report.policy)
        if self.on_report is not None:
            self.on_report(report, observed)
        return out

    def plan(self, desired: DesiredState, observed: ObservedState, *, now: datetime, partial: bool = False) -> Plan:
        """Planner wrapper: the planner's plan through ``stage``."""
        base = (
            self._planner(desired, observed, now=now, partial=partial) if partial else self._planner(desired, observed, now=now)
        )
        return self.stage(desired, observed, base, partial=partial)
