"""build_manager: the one place the controller is wired, from an Options and a few explicit test seams."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

from kubernetes.client import ApiClient

from gitops_kd.alerts.config import build_hub, send_when_owned, watch_record
from gitops_kd.controller.acting import Actor
from gitops_kd.controller.commits import Commits
from gitops_kd.controller.dispatch import Dispatcher
from gitops_kd.controller.drift import drift_wiring
from gitops_kd.controller.gitfeed import GitFeed
from gitops_kd.controller.instance import NOT_READY_AFTER_FAILED_POLLS, InstanceRecord
from gitops_kd.controller.options import Options
from gitops_kd.controller.planning import Planning
from gitops_kd.controller.reconcile_app import AppReconciler
from gitops_kd.controller.reconcile_cluster import ClusterReconciler
from gitops_kd.controller.reconcile_fleet import FleetReconciler, Owns
from gitops_kd.controller.record_keeper import RecordKeeper
from gitops_kd.controller.refusals import RefusalReporter
from gitops_kd.controller.refused_writes import RefusedWrites
from gitops_kd.controller.runtime import Manager
from gitops_kd.controller.sharding import shard_fences, shard_leases
from gitops_kd.controller.stages import Planner
from gitops_kd.controller.syncrequest import CHECK_INTERVAL, SyncRequests
from gitops_kd.execute import Executor, Outcome
from gitops_kd.observe.collector import Collector
from gitops_kd.plan.actions import Action
from gitops_kd.plan.planner import plan as make_plan
from gitops_kd.source import GitSource, Poller
from gitops_kd.status.source import KIND as SOURCE_KIND
from gitops_kd.status.source import condition_series
from kubeplumb.workqueue import WorkQueue

log = logging.getLogger(__name__)

__all__ = ["Manager", "build_manager"]


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _every_key(_work: Any) -> bool:
    return True


def build_manager(
    options: Options,
    *,
    api_client: ApiClient,
    source: GitSource,
    metrics: Any = None,
    now: Callable[[], datetime] = _utcnow,
    on_action: Callable[[Action, Outcome], None] | None = None,
    planner: Planner | None = None,
    drift_notifier: Any = None,
    owns: Owns = _every_key,
    on_lease_lost: Callable[[], None] | None = None,
) -> Manager:
    """The controller `gitops-kd run` runs, wired from ``options``. Test seams (never another wiring): ``metrics``
    (a ControllerMetrics to read; default a new one when options.metrics), ``now``, ``on_action`` (called after
    each executed action), ``planner`` (instead of the pure plan/planner.py: to count or hold calls; the drift
    stage still follows it), ``drift_notifier`` (instead of a WebhookNotifier of options.drift.webhook_url).
    ``owns`` (sharding): the work keys this instance reconciles. ``on_lease_lost``: the Lease was lost."""
    from gitops_kd.server.metrics import ControllerMetrics

    m = Manager(options, source, api_client)
    m.metrics = metrics if metrics is not None or not options.metrics else ControllerMetrics()
    if options.record:
        m.record = InstanceRecord(
            api_client, namespace=options.own_namespace, name=options.lease.name, url=source.url, branch=source.branch
        )
    m.commits = Commits(source.applied_commit)
    m.collector = Collector(api_client, namespace=options.scope)
    m.queue = WorkQueue(
        lambda key: m.dispatch.reconcile(key), name="gitops-kd", workers=m.workers, base_delay=0.2, max_delay=30.0
    )
    m.executor = Executor(api_client, now=now, reverter=lambda commit, reason: m.feed.push_revert(commit, reason))
    m.refusals = RefusalReporter(m.executor.events, on_refused=m.metrics.commit_refused if m.metrics is not None else None)
    m.feed = GitFeed(
        source=source,
        commits=m.commits,
        collector=m.collector,
        queue=m.queue,
        refusals=m.refusals,
        record=m.record,
        metrics=m.metrics,
        trigger_poll=m.trigger_poll,
    )
    m.poller = Poller(source, m.feed.on_poll, interval=options.poll_interval)
    hub = build_hub(options.alerts, m.metrics)  # the alerts edge (None without a channel)
    watch_record(hub, m.record, kind=SOURCE_KIND, not_ready_after=NOT_READY_AFTER_FAILED_POLLS)
    if m.record is not None and m.metrics is not None:  # the source's conditions as a gauge, from current state
        metrics_now = m.metrics
        metrics_now.set_source_condition(condition_series(m.record.record, NOT_READY_AFTER_FAILED_POLLS))
        m.record.listeners.append(
            lambda _before, after: metrics_now.set_source_condition(condition_series(after, NOT_READY_AFTER_FAILED_POLLS))
        )
    if options.shards > 1:
        owns = shard_leases(m, api_client, options)
        send_when_owned(hub, owns)  # one alert per event, from the holder of its object's shard
    m.drift = drift_wiring(
        api_client,
        metrics=m.metrics,
        policy=options.drift.policy,
        webhook_url=options.drift.webhook_url,
        ignore_file=options.drift.ignore_file,
        wave_soak_seconds=options.wave_soak_seconds,
        prune=options.prune,
        notifier=drift_notifier,
        hub=hub,
    )
    pure = planner or partial(make_plan, wave_soak_seconds=options.wave_soak_seconds, prune=options.prune)
    planning = Planning(pure, [m.drift.stage], m.scope, now)
    refused = RefusedWrites(m.record)  # refused writes of the applied commit: the GitOpsKDSource says so

    def acted(action: Action, outcome: Outcome) -> None:
        refused.on_outcome(action, outcome)
        if on_action is not None:
            on_action(action, outcome)

    m.actor = Actor(m.executor, m.collector, m.queue, per_key=m.per_key, metrics=m.metrics, on_action=acted)
    if m.record is not None:
        leads = None if m.shards is None else (lambda: m.shards.holds(0))
        m.keeper = RecordKeeper(
            m.record,
            source,
            m.collector,
            on_trusted=m.record_trusted,
            leads=leads,
            on_lead=m.record_led,
            applied=m.commits.applied_commit,
            serial=planning.lock,
            on_git=m.metrics.set_git_health if m.metrics is not None else None,
        )
    m.fleet = FleetReconciler(
        commits=m.commits,
        planning=planning,
        collector=m.collector,
        actor=m.actor,
        queue=m.queue,
        source=source,
        refusals=m.refusals,
        record=m.record,
        keeper=m.keeper,
        refused=refused,
        metrics=m.metrics,
        per_key=m.per_key,
        owns=owns,
    )
    m.actor.after_part_action = m.fleet.schedule
    cluster, app = (
        kind(commits=m.commits, planning=planning, collector=m.collector, actor=m.actor, schedule_fleet=m.fleet.schedule)
        for kind in (ClusterReconciler, AppReconciler)
    )
    m.dispatch = Dispatcher(
        commits=m.commits,
        collector=m.collector,
        queue=m.queue,
        keeper=m.keeper,
        metrics=m.metrics,
        per_key=m.per_key,
        owns=owns,
        fleet=m.fleet,
        cluster=cluster,
        app=app,
    )
    m.drift.attach(m)
    if m.record is not None:
        m.requests = SyncRequests(api_client, m.record, m, interval=options.sync_check_interval or CHECK_INTERVAL)
    if m.shards is not None:
        m.set_key_fence(owns)
        shard_fences(m, options.shards)  # each write: the Lease of the key acted for; drains wait for actions
    elif options.lease.elect:
        m.replica = _replica(m, api_client, options, on_lease_lost)
    return m


def _replica(m: Manager, api_client: ApiClient, options: Options, on_lost: Callable[[], None] | None) -> Any:
    """Leader election: the Replica serves the endpoints, starts the manager while it leads and fences its writes."""
    from gitops_kd.controller.replica import Replica

    lease = options.lease
    log.info("leader election: Lease %s", lease.name)
    return Replica(
        m,
        api_client,
        lease_namespace=options.own_namespace,
        lease_name=lease.name,
        listen=options.listen,
        webhook_secret=options.webhook_secret,
        metrics=m.metrics,
        lease_duration=lease.duration,
        renew_deadline=lease.renew_deadline,
        retry_period=lease.retry_period,
        on_lost=on_lost,
    )
