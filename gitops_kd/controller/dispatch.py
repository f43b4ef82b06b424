"""Dispatch: the work queue's function — gate a key, route it to its kind's reconciler; which keys a change wakes."""

from __future__ import annotations

from typing import Any

from gitops_kd.constants import REQUEUE_NOT_SYNCED
from gitops_kd.controller.acting import DONE, KEY, Result
from gitops_kd.controller.commits import Commits
from gitops_kd.controller.reconcile_fleet import FleetReconciler, Owns
from gitops_kd.controller.reconcile_part import PartReconciler
from gitops_kd.controller.record_keeper import RecordKeeper
from gitops_kd.observe.collector import Collector
from gitops_kd.plan.focus import APP, FLEET, WorkKey, app_key, cluster_key, users
from kubeplumb.workqueue import RequeueAfter, WorkQueue

UNHEALTHY_AFTER = 15  # reconciles in a row that raised before the manager reports itself unhealthy


class Dispatcher:
    """One reconcile of one work key (plan/focus.py): FLEET to the fleet reconciler, a KDCluster or KDApp key to
    its own; a key this instance does not own (``owns``, sharding) is skipped. Counts reconciles that raised."""

    def __init__(
        self,
        *,
        commits: Commits,
        collector: Collector,
        queue: WorkQueue,
        keeper: RecordKeeper | None,
        metrics: Any,
        per_key: bool,
        owns: Owns,
        fleet: FleetReconciler,
        cluster: PartReconciler,
        app: PartReconciler,
    ) -> None:
        self._commits, self._collector, self._queue, self._keeper = commits, collector, queue, keeper
        self._metrics, self._per_key, self.owns = metrics, per_key, owns
        self._fleet, self._cluster, self._app = fleet, cluster, app
        self.errors_in_row = 0

    def reconcile(self, key: str) -> None:
        """The queue's function: a Result asking to look again becomes the queue's RequeueAfter."""
        try:
            if self._metrics is None:
                self._requeue(self._route(key))
            else:
                with self._metrics.reconcile_timer() as result:
                    try:
                        self._requeue(self._route(key))
                    except RequeueAfter:
                        result["result"] = "requeue"
                        raise
        except RequeueAfter:
            self.errors_in_row = 0
            raise
        except Exception:
            self.errors_in_row += 1
            raise
        self.errors_in_row = 0

    @staticmethod
    def _requeue(result: Result) -> None:
        if result.requeue_after is not None:
            raise RequeueAfter(result.requeue_after)

    @property
    def healthy(self) -> bool:
        return self.errors_in_row < UNHEALTHY_AFTER

    def _route(self, key: str) -> Result:
        work = WorkKey.parse(key)
        if self._keeper is not None:  # no plan from a record not trusted, nor while the cluster's lags what was applied
            self._keeper.gate(choosing=work.kind == FLEET)  # the fleet reconcile gates once it chose its commit
        if not self._collector.wait_synced(0) or not self._commits.polled.is_set():
            # Before the first poll the last applied commit may be older than one already started (a commit
            # whose KDApp KubeDirector refused is accepted, not applied): planning it would flip the rollout.
            return Result(REQUEUE_NOT_SYNCED)
        if work.kind == FLEET:
            return self._fleet.reconcile()
        if not self._commits.chosen.is_set():
            return Result(REQUEUE_NOT_SYNCED)
        if not self.owns(work):
            return DONE  # another shard's key
        return (self._app if work.kind == APP else self._cluster).reconcile(work)

    def on_change(self, kind: str, key: tuple[str, str]) -> None:
        """A watched object changed: queue its cluster's key, or an app's key and its users' keys."""
        if not self._per_key:
            self._queue.add(KEY)
            return
        if kind != APP:
            self._add(cluster_key(key))
            return
        self._add(app_key(key))
        desired = self._commits.current()
        live = self._collector.index.clusters_using(key[1])
        wanted = users(desired, key[1]) if desired is not None and key in desired.apps else frozenset()
        for user in live | wanted:
            self._add(cluster_key(user))

    def _add(self, work: WorkKey) -> None:
        if self.owns(work):
            self._queue.add(str(work))
