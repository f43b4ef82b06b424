"""Manager: the controller's lifecycle (start/stop/serve) and the surface the HTTP endpoints and tests use."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any, cast

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from gitops_kd.controller.acting import KEY, Actor, KeyFence
from gitops_kd.controller.commits import Commits
from gitops_kd.controller.dispatch import Dispatcher
from gitops_kd.controller.drift import DriftWiring
from gitops_kd.controller.gitfeed import GitFeed
from gitops_kd.controller.http import HttpServer, make_app
from gitops_kd.controller.instance import NOT_READY_AFTER_FAILED_POLLS, InstanceRecord
from gitops_kd.controller.options import Options
from gitops_kd.controller.pollrequest import request_poll
from gitops_kd.controller.reconcile_fleet import FleetReconciler
from gitops_kd.controller.record_keeper import RecordKeeper
from gitops_kd.controller.refusals import RefusalReporter
from gitops_kd.controller.scope import Scope
from gitops_kd.controller.syncrequest import SyncRequests
from gitops_kd.execute import Executor
from gitops_kd.observe.collector import Collector
from gitops_kd.plan.actions import Plan
from gitops_kd.source import DesiredState, GitSource, Poller
from kubeplumb.informer import MODIFIED
from kubeplumb.rest import RestClient
from kubeplumb.workqueue import WorkQueue

log = logging.getLogger(__name__)


def default_workers() -> int:
    """Reconcile workers when not given: two per core, at least 2 and at most 8 (workers mostly wait on I/O)."""
    return max(2, min(8, 2 * (os.cpu_count() or 1)))


class Manager:
    """The gitops-kd controller for one Git source and one cluster, as build_manager wired it.

    `start()` starts the informers, the Git poller, the reconcile workers and (with `options.listen` and no leader
    election) the HTTP endpoints; `stop()` stops them, letting a running action finish. `serve()` starts it as
    `gitops-kd run` does (campaigning for the Lease first with leader election); `close()` undoes `serve()`.
    Work is keyed (plan/focus.py, docs/design/controller.md): the fleet key, and one key per KDCluster and KDApp.
    """

    def __init__(self, options: Options, source: GitSource, api_client: ApiClient) -> None:
        self.options, self.source, self._api_client = options, source, api_client
        self.namespace = options.scope
        self.scope = Scope.of(options.scope)
        self.per_key = options.per_key
        self.workers = (options.workers or default_workers()) if self.per_key else 1
        self.record: InstanceRecord | None = None
        self.keeper: RecordKeeper | None = None
        self.metrics: Any = None
        self.drift: DriftWiring | None = None
        self.requests: SyncRequests | None = None
        self.replica: Any = None  # controller.replica.Replica with leader election
        self.shards: Any = None  # kube.shardleases.ShardLeases with --shards > 1
        self.http: HttpServer | None = None
        self._stopping = threading.Event()
        self._stop_lock = threading.Lock()
        self._started = False
        self._fence: Callable[[], bool] = lambda: True

    # wired by build_manager
    collector: Collector
    executor: Executor
    poller: Poller
    queue: WorkQueue
    refusals: RefusalReporter
    commits: Commits
    actor: Actor
    fleet: FleetReconciler
    feed: GitFeed
    dispatch: Dispatcher

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self, *, sync_timeout: float = 30.0) -> Manager:
        if self._started:
            return self
        self._started = True
        self.collector.on_change(self.dispatch.on_change)
        for kind in ("apps", "clusters"):  # an object added or gone: prune and acceptance are the fleet's
            self.collector.informers[kind].add_handler(
                lambda event, _obj, _old: self.queue.add(KEY) if event != MODIFIED else None
            )
        self.collector.start()
        if not self.collector.wait_synced(sync_timeout):
            log.warning("informers not synced after %ss; continuing (reconciles wait for them)", sync_timeout)
        if self.keeper is not None and not self.keeper.trusted:
            self.keeper.untrusted_since = time.monotonic()  # no plan runs until it is checked (blocked_for)
        if not self.feed.load_record(self.keeper, self._stopping):
            return self
        self.queue.start()
        if self.keeper is None or self.keeper.trusted:  # else the keeper starts them once the record checks out
            self.feed.load_applied()
            self.poller.start()
        if self.keeper is not None:
            self.keeper.start()
        if self.options.listen is not None and self.replica is None:
            app = make_app(
                self,
                webhook_secret=self.options.webhook_secret,
                branch=self.source.branch,
                metrics=self.metrics,
                ui=self.ui_config(),
            )
            self.http = HttpServer(app, *self.options.listen).start()
        log.info("controller started: %s@%s, %s", self.source.url, self.source.branch, self.scope.describe())
        return self

    def stop(self) -> None:
        """Graceful stop: no new polls or actions; a running action completes first. A second caller (SIGTERM
        while a yielding leader drains) waits for the first one's stop to finish."""
        self._stopping.set()
        with self._stop_lock:
            self._stop()

    def _stop(self) -> None:
        if not self._started:
            return
        self._started = False
        if self.http is not None:
            self.http.stop()
        if self.keeper is not None:
            self.keeper.stop()
        self.poller.stop()
        self.queue.stop(timeout=60)
        self.collector.stop()
        self.executor.close()
        log.info("controller stopped")

    def serve(self) -> HttpServer | None:
        """Start as `gitops-kd run` does: `gitops-kd sync` requests, then the replica campaigning for the Lease
        (leader election) or the controller at once; the HTTP server serving the endpoints, if any."""
        if self.requests is not None:
            self.requests.start()
        if self.replica is not None:
            self.replica.start()
            return cast("HttpServer | None", self.replica.http)
        if self.shards is not None:
            self.shards.start()
        self.start()
        return self.http

    def close(self) -> None:
        """Stop everything serve() or start() started (the source is the caller's to close)."""
        if self.requests is not None:
            self.requests.stop()
        if self.replica is not None:
            self.replica.stop()
        else:
            self.stop()
        if self.shards is not None:
            self.shards.stop()  # after the last action: its shards are released for the others at once
        self.collector.stop()  # started by the admission webhook on a standby too
        if self.drift is not None:
            self.drift.close()

    def __enter__(self) -> Manager:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- surface for the HTTP endpoints and tests --------------------------------------------------
    def set_fence(self, fence: Callable[[], bool]) -> None:
        """Only act while ``fence()`` is True: checked right before each write and exec of the executor and of
        the instance record (leader election)."""
        self._fence = fence
        self.executor.set_fence(fence)
        if self.record is not None:
            self.record.set_fence(fence)

    def set_key_fence(self, fence: KeyFence) -> None:
        """Only act for a work key while ``fence(key)`` is True (sharding: the key's shard Lease is fresh); checked
        right before each action of that key, besides the global fence."""
        self.actor.key_fence = fence

    def may_act(self) -> bool:
        """The fence (set_fence; always True without one): others that write for this controller check it too."""
        return self._fence()

    def trigger_poll(self) -> str | None:
        """Poll Git now (push webhook). Sharded, on a replica not holding shard 0: also wake shard 0's holder (it
        writes the record the others wait for) through the GitOpsKDSource's requestedAt annotation, which its
        SyncRequests reads every few seconds; returns what was done, for the /webhook answer."""
        if self.poller.running:
            self.poller.trigger_now()
        if self.shards is None or self.record is None or self.shards.holds(0):
            return None
        record = (self.record.namespace, self.record.name)
        try:
            request_poll(RestClient(self._api_client), *record)
        except ApiException as exc:
            raise RuntimeError(
                f"recording the poll request on gitopskdsource {record[0]}/{record[1]} for shard 0's holder "
                f"failed: {exc.status} {exc.reason}"
            ) from None
        log.info("push: poll requested from shard 0's holder on gitopskdsource %s/%s", *record)
        return f"poll triggered; shard 0's holder asked to poll (gitopskdsource {record[0]}/{record[1]})"

    @property
    def ready(self) -> bool:
        """Started, informers synced, Git polled, and fewer than NOT_READY_AFTER_FAILED_POLLS polls in a row
        failed to read the repository (liveness is not affected: restarting does not fix a Git outage)."""
        return (
            self._started
            and self.collector.wait_synced(0)
            and self.poller.polls > 0
            and getattr(self.source, "failing_polls", 0) < NOT_READY_AFTER_FAILED_POLLS
        )

    @property
    def healthy(self) -> bool:
        """False once dispatch.UNHEALTHY_AFTER reconciles in a row raised (the API server or Git unusable for
        minutes, with the queue's backoff), or once the controller could not plan for ``options.unhealthy_after``
        seconds (blocked_for): a liveness probe then restarts the process."""
        bound = self.options.unhealthy_after
        return self.dispatch.healthy and not (bound > 0 and self.blocked_for() >= bound)

    def blocked_for(self) -> float:
        """Seconds for which no plan could run: the instance record not trusted (or not checked yet), or the local
        Git cache unreadable even after it was cloned again. A Git server that cannot be reached does not count
        (plans go on from the last good commit and a restart would not fix it)."""
        if not self._started:
            return 0.0  # a standby plans nothing by design
        since = self.keeper.untrusted_since if self.keeper is not None else None
        keeper = time.monotonic() - since if since is not None else 0.0
        return max(keeper, getattr(self.source, "cache_unusable_for", 0.0))

    @property
    def desired(self) -> DesiredState | None:
        """The desired state being reconciled (the last commit whose plan was not refused)."""
        return self.commits.current()

    @property
    def last_plan(self) -> Plan | None:
        """The last whole-fleet plan."""
        return self.fleet.last_plan

    @property
    def actions_executed(self) -> int:
        return self.actor.actions_executed

    def ui_config(self) -> Any:
        """The gitops_kd.server.ui.UiConfig for the HTTP app (None when the UI is off): reads with this
        controller's client, in its scope; Git facts from its source."""
        ui = self.options.ui
        if ui is None or not ui.enabled:
            return None
        from gitops_kd.server.ui import ui_config

        return ui_config(
            ui,
            self._api_client,
            self.namespace,
            self.source,
            auth=ui.auth(),
            record_namespace=self.record.namespace if self.record is not None else None,
        )

    def record_trusted(self) -> None:
        """The keeper found the record trustworthy after a stall: start from what it says was applied."""
        self.commits.marked = None
        self.feed.load_applied()
        self.poller.start()
        self.kick()

    def record_led(self) -> None:
        """Sharding: this replica took shard 0 and re-checked the record: as a new leader at start, plan from what
        the record says was applied, the fleet reconcile choosing (and recording) the newest commit first."""
        with self.commits.lock:
            self.commits.chosen.clear()
            self.commits.applied = None
            self.commits.marked = None
        self.feed.load_applied()
        self.kick()

    def kick(self) -> None:
        """Re-plan now (the whole fleet, which queues every key with work)."""
        self.queue.add(KEY)

    def enqueue(self, kind: str, key: tuple[str, str]) -> None:
        """Reconcile what a change of the KDCluster (kind "cluster") or KDApp ("app") ``key`` touches."""
        self.dispatch.on_change(kind, key)
