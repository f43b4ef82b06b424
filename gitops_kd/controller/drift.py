"""Drift wiring for the runtime: the drift stage (after the planner), the alerts it feeds, a DriftWatcher."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from kubernetes.client import ApiClient

from gitops_kd.alerts import sources
from gitops_kd.alerts.hub import AlertHub
from gitops_kd.controller.drift_watcher import DriftWatcher
from gitops_kd.controller.stages import PlanStage
from gitops_kd.drift import DriftAlerter, DriftGuard, IgnoreRules
from gitops_kd.drift.classify import DriftReport
from gitops_kd.execute.events import EventRecorder
from gitops_kd.execute.fence import FencedRest
from gitops_kd.observed import ObservedState
from gitops_kd.plan.planner import plan
from gitops_kd.plan.result import Plan
from gitops_kd.server.notify import WebhookNotifier

log = logging.getLogger(__name__)


@dataclass
class DriftWiring:
    """The guarded planner to give the Controller, and what to attach/close around it."""

    guard: DriftGuard
    notifier: WebhookNotifier | None
    rest: FencedRest  # the drift Events' client: fenced by the controller it is attached to
    watcher: DriftWatcher | None = None  # set by attach
    hub: AlertHub | None = None  # the alerts edge the stage feeds (drift and stall alerts)

    @property
    def planner(self) -> Callable[..., Plan]:
        return self.guard.plan

    @property
    def stage(self) -> PlanStage:
        """The guard as the post-plan stage the manager runs after the pure planner (controller/stages.py)."""
        return self.guard.stage

    def attach(self, controller: Any) -> None:
        """Reconcile at once when an owned field of a watched object is edited (not only on the next event); drift
        Events are written only while ``controller.may_act()`` (a deposed leader's planning alerts nobody)."""
        self.rest.fence = controller.may_act
        self.watcher = DriftWatcher(controller.enqueue)
        self.watcher.attach_collector(controller.collector)

    def close(self) -> None:
        if self.notifier is not None:
            self.notifier.close()
        if self.hub is not None:
            self.hub.close()


def alert_feed(hub: AlertHub) -> Callable[[DriftReport, ObservedState], None]:
    """What the drift stage hands each report to: drift alerts, and stall alerts of the rollouts observed."""

    def feed(report: DriftReport, observed: ObservedState) -> None:
        sources.drift(hub, report)
        sources.stalls(hub, observed, observed.clusters.keys())

    return feed


def drift_wiring(
    api_client: ApiClient,
    *,
    metrics: Any = None,
    policy: str = "revert",
    webhook_url: str | None = None,
    ignore_file: str | None = None,
    wave_soak_seconds: float = 0.0,
    prune: bool = False,
    notifier: Any = None,
    hub: AlertHub | None = None,
) -> DriftWiring:
    """Drift detection around the real planner: alerts (Events, metrics, optional webhook) once per
    occurrence; `policy` "revert" (default) or "alert-only" for objects without their own annotation; `prune`
    as for the planner; `hub`: the alerts edge fed from each report;
    `notifier` instead of a WebhookNotifier of `webhook_url` (tests)."""
    now: Callable[[], datetime] = lambda: datetime.now(UTC)  # noqa: E731
    if notifier is None and webhook_url:
        notifier = WebhookNotifier(webhook_url)
    rest = FencedRest(api_client)
    alerter = DriftAlerter(events=EventRecorder(rest, now), metrics=metrics, notifier=notifier, now=now)
    rules = IgnoreRules.from_file(ignore_file) if ignore_file else None
    guard = DriftGuard(
        alerter,
        rules=rules,
        default_policy=policy,
        planner=partial(plan, wave_soak_seconds=wave_soak_seconds, prune=prune),
        on_report=alert_feed(hub) if hub is not None else None,
    )
    log.info("drift guard on: default policy %s%s", policy, f", webhook {webhook_url}" if webhook_url else "")
    return DriftWiring(guard, notifier, rest, hub=hub)
