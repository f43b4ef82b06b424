"""The controller's Prometheus metrics, on their own registry, and the aiohttp /metrics handler."""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import choose_encoder

from gitops_kd.constants import ROLLOUT_PHASES
from gitops_kd.rollout.model import Stage

POLL_RESULTS = ("changed", "unchanged", "refused", "error")
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ControllerMetrics:
    """Every gitops-kd metric, registered on `registry` (a fresh CollectorRegistry by default).

    Label values are free text except `phase` (one of ROLLOUT_PHASES) and `stage` (one of rollout.model.Stage).
    Methods are thread-safe.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.reconcile_total = Counter("gitops_kd_reconcile_total", "Reconciles by result.", ["result"], registry=r)
        self.reconcile_duration = Histogram(
            "gitops_kd_reconcile_duration_seconds", "Time one reconcile took.", buckets=RECONCILE_BUCKETS, registry=r
        )
        self.git_poll_total = Counter(
            "gitops_kd_git_poll_total", "Git polls by result (changed, unchanged, refused, error).", ["result"], registry=r
        )
        self.applied_commit_info = Gauge(
            "gitops_kd_applied_commit_info",
            "The Git commit whose desired state was last applied (value 1).",
            ["commit"],
            registry=r,
        )
        self.drift_detected_total = Counter(
            "gitops_kd_drift_detected_total",
            "Out-of-band changes detected (and reverted), per object.",
            ["kind", "namespace", "name"],
            registry=r,
        )
        self.drift_active = Gauge(
            "gitops_kd_drift_active", "1 while an object differs from Git, else 0.", ["kind", "namespace", "name"], registry=r
        )
        self.upgrade_steps_total = Counter(
            "gitops_kd_upgrade_steps_total", "Upgrade steps executed, by result.", ["step", "result"], registry=r
        )
        self.rollout_phase = Gauge(
            "gitops_kd_rollout_phase",
            "1 for the current phase of a KDCluster's rollout, 0 for the others.",
            ["namespace", "cluster", "phase"],
            registry=r,
        )
        self.rollout_pods = Gauge(
            "gitops_kd_rollout_pods",
            "Member pods per stage the planner recorded in the KDRollouts this replica observes (status.pods[pod].stage).",
            ["stage"],
            registry=r,
        )
        self.refused_commits_total = Counter(
            "gitops_kd_refused_commits_total", "Commits refused (invalid, forbidden change, untrusted).", registry=r
        )
        self.alerts_dropped_total = Counter(
            "gitops_kd_alerts_dropped_total",
            "Alerts dropped (oldest first) because a channel's queue was full.",
            ["channel"],
            registry=r,
        )
        self.git_failing_polls = Gauge(
            "gitops_kd_git_failing_polls",
            "Git polls in a row that could not read the repository (0 when the last worked).",
            registry=r,
        )
        self.git_cache_recoveries = Gauge(
            "gitops_kd_git_cache_recoveries", "Times a corrupt local Git cache was removed and cloned again.", registry=r
        )
        self.admission_total = Counter(
            "gitops_kd_admission_requests_total",
            "Admission webhook answers by kind and result (allowed, denied, break-glass; "
            "exempt: gitops-kd's or KubeDirector's users; not-judged: answered by the "
            "failure policy).",
            ["kind", "result"],
            registry=r,
        )
        self.source_condition = Gauge(
            "gitops_kd_source_condition",
            "1 for the GitOpsKDSource's current condition of each type (Ready, Reconciling, Stalled) with its status "
            "and reason (e.g. Ready False CommitRefused), 0 for the combinations it had before: current state, for alerts.",
            ["type", "status", "reason"],
            registry=r,
        )
        self.rollout_condition = Gauge(
            "gitops_kd_rollout_condition",
            "1 for a KDRollout's current condition of each type (Ready, Reconciling, Stalled) with its status and "
            "reason, 0 for the combinations it had before.",
            ["namespace", "cluster", "type", "status", "reason"],
            registry=r,
        )
        self._conditions: dict[tuple[str, ...], set[tuple[str, ...]]] = {}  # label prefix -> condition series set
        self._conditions_lock = threading.Lock()
        self.leader = Gauge("gitops_kd_leader", "1 while this replica holds the leader lease, else 0.", registry=r)
        self.shard_held = Gauge(
            "gitops_kd_shard_held", "With --shards: 1 while this replica holds the shard's Lease, else 0.", ["shard"], registry=r
        )
        self.shard_clusters = Gauge(
            "gitops_kd_shard_clusters",
            "With --shards: the KDClusters of each shard this replica holds (0 for the others): "
            "summed over the replicas, the fleet.",
            ["shard"],
            registry=r,
        )
        self._lock = threading.Lock()
        self._commit: str | None = None

    # -- reconcile -------------------------------------------------------------------------------
    def observe_reconcile(self, result: str, seconds: float) -> None:
        """Count one reconcile with `result` (e.g. success, error, requeue) that took `seconds`."""
        self.reconcile_total.labels(result=result).inc()
        self.reconcile_duration.observe(max(0.0, seconds))

    @contextmanager
    def reconcile_timer(self) -> Iterator[dict[str, str]]:
        """Time a reconcile: ``with m.reconcile_timer() as r: ...; r["result"] = "requeue"``.
        The result is the one the block set (even when it then raises, as a requeue does), else "success",
        or "error" when the block raises without setting one."""
        outcome: dict[str, str] = {}
        start = time.perf_counter()
        try:
            yield outcome
        except BaseException:
            outcome.setdefault("result", "error")
            raise
        finally:
            self.observe_reconcile(outcome.get("result", "success"), time.perf_counter() - start)

    # -- git ----------------------------------------------------------------------------------------
    def record_poll(self, result: str) -> None:
        """Count one Git poll; `result` is one of POLL_RESULTS."""
        if result not in POLL_RESULTS:
            raise ValueError(f"git poll result {result!r}: must be one of {', '.join(POLL_RESULTS)}")
        self.git_poll_total.labels(result=result).inc()

    def set_applied_commit(self, commit: str) -> None:
        """Expose `commit` as the applied one (the previous commit's series is removed)."""
        with self._lock:
            if self._commit is not None and self._commit != commit:
                self.applied_commit_info.remove(self._commit)
            self._commit = commit
            self.applied_commit_info.labels(commit=commit).set(1)

    def set_git_health(self, failing_polls: int, recoveries: int) -> None:
        self.git_failing_polls.set(failing_polls)
        self.git_cache_recoveries.set(recoveries)

    def set_source_condition(self, conditions: Iterable[tuple[str, str, str]]) -> None:
        """The source's conditions now, each (type, status, reason): those 1, every other combination seen 0."""
        self._set_current(self.source_condition, (), conditions)

    def set_rollout_conditions(self, namespace: str, cluster: str, conditions: Iterable[tuple[str, str, str]]) -> None:
        """A KDRollout's conditions now, each (type, status, reason): those 1, its other combinations seen 0."""
        self._set_current(self.rollout_condition, (namespace, cluster), conditions)

    def forget_rollout_conditions(self, namespace: str, cluster: str) -> None:
        """Drop a KDRollout's condition series (its KDCluster is gone)."""
        with self._conditions_lock:
            for labels in self._conditions.pop((namespace, cluster), set()):
                try:
                    self.rollout_condition.remove(*labels)
                except KeyError:
                    pass

    def _set_current(self, gauge: Gauge, prefix: tuple[str, ...], current: Iterable[tuple[str, str, str]]) -> None:
        """``gauge``'s series under ``prefix``: 1 for each of ``current``, 0 for the others set before (kstatus
        conditions as gauges: an alert on `== 1` resolves the moment the condition ends; its series stays, at 0)."""
        now = {(*prefix, *c) for c in current}
        with self._conditions_lock:
            seen = self._conditions.setdefault(prefix, set())
            for labels in seen - now:
                gauge.labels(*labels).set(0)
            for labels in now:
                gauge.labels(*labels).set(1)
            seen |= now

    def commit_refused(self) -> None:
        self.refused_commits_total.inc()

    def alert_dropped(self, channel: str) -> None:
        self.alerts_dropped_total.labels(channel=channel).inc()

    # -- drift --------------------------------------------------------------------------------------
    def drift_detected(self, kind: str, namespace: str, name: str) -> None:
        """Count a detected drift and mark the object as drifted."""
        self.drift_detected_total.labels(kind=kind, namespace=namespace, name=name).inc()
        self.drift_active.labels(kind=kind, namespace=namespace, name=name).set(1)

    def drift_ongoing(self, kind: str, namespace: str, name: str) -> None:
        """An occurrence already alerted is still there: keep its gauge at 1 (it may have been reset)."""
        self.drift_active.labels(kind=kind, namespace=namespace, name=name).set(1)

    def drift_resolved(self, kind: str, namespace: str, name: str) -> None:
        self.drift_active.labels(kind=kind, namespace=namespace, name=name).set(0)

    def forget_object(self, kind: str, namespace: str, name: str) -> None:
        """Drop an object's drift series (call when the object is gone)."""
        for metric in (self.drift_active, self.drift_detected_total):
            try:
                metric.remove(kind, namespace, name)
            except KeyError:
                pass

    # -- upgrades -----------------------------------------------------------------------------------
    def upgrade_step(self, step: str, result: str) -> None:
        """Count one executed upgrade step (e.g. DeletePod) with its result (e.g. success, error)."""
        self.upgrade_steps_total.labels(step=step, result=result).inc()

    def set_rollout_phase(self, namespace: str, cluster: str, phase: str) -> None:
        """Set the KDCluster's rollout phase: 1 for `phase`, 0 for every other phase."""
        if phase not in ROLLOUT_PHASES:
            raise ValueError(f"rollout phase {phase!r}: must be one of {', '.join(ROLLOUT_PHASES)}")
        for each in ROLLOUT_PHASES:
            self.rollout_phase.labels(namespace=namespace, cluster=cluster, phase=each).set(int(each == phase))

    def forget_rollout(self, namespace: str, cluster: str) -> None:
        """Drop a KDCluster's phase series (call when the KDCluster is deleted)."""
        for each in ROLLOUT_PHASES:
            try:
                self.rollout_phase.remove(namespace, cluster, each)
            except KeyError:
                pass

    def set_rollout_pods(self, stages: Mapping[str, int]) -> None:
        """Pods per recorded stage (``stages``: stage -> pods); every Stage is set, 0 when absent, and a value outside
        Stage (a newer writer's) is not exposed (the label set stays the enum's)."""
        for each in Stage:
            self.rollout_pods.labels(stage=each).set(stages.get(each, 0))

    # -- leadership ---------------------------------------------------------------------------------
    def set_leader(self, leading: bool) -> None:
        self.leader.set(1 if leading else 0)

    def set_shards(self, held: frozenset[int], shards: int) -> None:
        """The shards this replica holds; shard 0's holder leads the instance (record, prune): gitops_kd_leader."""
        for shard in range(shards):
            self.shard_held.labels(str(shard)).set(1 if shard in held else 0)
        self.set_leader(0 in held)

    def count_shards(self, shards: int, clusters: Callable[[int], int]) -> None:
        """gitops_kd_shard_clusters{shard} reads ``clusters(shard)`` at each scrape."""
        for shard in range(shards):
            self.shard_clusters.labels(str(shard)).set_function(partial(clusters, shard))


def poll_result_label(*, changed: bool, accepted: bool, failed: bool) -> str:
    """The git_poll_total label for a poll: error (fetch failed), refused, changed or unchanged."""
    if failed:
        return "error"
    if not changed:
        return "unchanged"
    return "changed" if accepted else "refused"


def make_metrics_handler(registry: CollectorRegistry | ControllerMetrics) -> Handler:
    """An aiohttp handler serving `registry` in the text format (OpenMetrics when the Accept header asks)."""
    reg = registry.registry if isinstance(registry, ControllerMetrics) else registry

    async def handle(request: web.Request) -> web.StreamResponse:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        return web.Response(body=encoder(reg), headers={"Content-Type": content_type})

    return handle
