"""Controller: Git poller -> desired state; observe -> plan -> execute ONE action -> re-observe (level-triggered)."""

from __future__ import annotations

import inspect
import logging
import os
import threading
import time
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient

from gitops_kd.constants import REQUEUE_NOT_SYNCED
from gitops_kd.controller.http import HttpServer, make_app
from gitops_kd.controller.instance import NOT_READY_AFTER_FAILED_POLLS, InstanceRecord
from gitops_kd.controller.record_keeper import RecordKeeper
from gitops_kd.controller.refusals import RefusalReporter
from gitops_kd.controller.scope import Scope, Scoped, restrict
from gitops_kd.controller.select import select
from gitops_kd.drift.model import SERVICE, STATEFULSET
from gitops_kd.execute import Executor, Outcome
from gitops_kd.execute.fence import NotLeading
from gitops_kd.kd.layout import KDCLUSTER_KIND
from gitops_kd.observe.collector import Collector
from gitops_kd.plan.actions import Action, ApplyApp, ApplyCluster, Plan, Prune, Wait
from gitops_kd.plan.focus import (
    APP,
    FLEET,
    FLEET_KEY,
    Part,
    WorkKey,
    app_key,
    app_part,
    cluster_key,
    cluster_part,
    owner,
    users,
)
from gitops_kd.plan.planner import plan as make_plan
from gitops_kd.server.metrics import ROLLOUT_PHASES, poll_result_label
from gitops_kd.source import DesiredState, GitSource, Poller, PollResult
from gitops_kd.source.revert import RevertError, push_revert_result
from gitops_kd.status.events import GIT_CACHE_RECOVERED, GIT_UNREADABLE
from kubeplumb.informer import MODIFIED
from kubeplumb.names import WARNING
from kubeplumb.workqueue import RequeueAfter, WorkQueue

log = logging.getLogger(__name__)

KEY = str(FLEET_KEY)  # the whole fleet: Git changes, acceptance, prune, in-sync record (and everything in fleet mode)
FLEET_DEBOUNCE = 1.0  # seconds after a per-key action before the fleet reconcile looks again (at least)
FLEET_SHARE = 0.1  # ... and at most this share of the time goes to whole-fleet plans while keys are busy
READ_YOUR_WRITES_TIMEOUT = 5.0
IDLE_RESYNC = 30.0
UNHEALTHY_AFTER = 15
NOOP_HOLD = 2.0
FENCED_RETRY = 1.0  # seconds before a reconcile whose write the fence refused looks again
RECORD_RETRY = 1.0  # seconds between attempts to read the instance record at start


def _utcnow() -> datetime:
    return datetime.now(UTC)


def default_workers() -> int:
    """Reconcile workers when not given: two per core, at least 2 and at most 8 (workers mostly wait on I/O)."""
    return max(2, min(8, 2 * (os.cpu_count() or 1)))


def _plans_parts(planner: Callable[..., Plan] | None) -> bool:
    """True when ``planner`` plans one key's part (takes ``partial=``): per-key reconciles; else fleet mode."""
    if planner is None:
        return True
    try:
        params = inspect.signature(planner).parameters
    except (TypeError, ValueError):
        return False
    return "partial" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


class Controller:
    """The gitops-kd runtime for one Git source and one cluster.

    `start()` starts the informers, the Git poller, the reconcile worker and (with `listen`, a
    (host, port) pair) the HTTP endpoints; `stop()` stops them all, letting a running action finish.
    `planner` is `plan(desired, observed, *, now) -> Plan` (gitops_kd.plan.planner.plan by default).
    `metrics` (a gitops_kd.server.metrics.ControllerMetrics) is updated and served on /metrics;
    `webhook_secret` makes /webhook verify GitHub/GitLab push signatures. `wave_soak_seconds`: how long
    a wave must have been Ready before the next wave of the app starts. `namespace` is the scope: one
    namespace, a set of them (a shard) or None (all); Git objects outside it are skipped (controller/scope.py).
    `record` (controller/instance.py) is the instance's GitOpsKDSource: read before the first poll and
    reconcile (its applied commit and force-push baseline replace the local cache's), written at each
    transition; without it the local state file alone says what was applied (tests, embedded use).
    `ui` (a gitops_kd.server.ui.UiSettings) serves the read-only web UI under /ui next to the endpoints.

    Work is keyed (plan/focus.py): the fleet key plans the whole desired state when Git or the set of objects
    changes (acceptance, prune, in-sync record, and which keys have work); each KDCluster and KDApp key plans
    only its part, from the informers' index, on `workers` threads; two workers never hold the same key. A
    `planner` that does not take ``partial=`` runs in fleet mode: one key, the whole plan each time.
    """

    def __init__(self, source: GitSource, api_client: ApiClient, *,
                 namespace: str | Collection[str] | None = "default", poll_interval: float = 30.0,
                 listen: tuple[str, int] | None = None,
                 planner: Callable[..., Plan] | None = None, now: Callable[[], datetime] = _utcnow,
                 on_action: Callable[[Action, Outcome], None] | None = None, metrics: Any = None,
                 webhook_secret: bytes | None = None, wave_soak_seconds: float = 0.0,
                 record: InstanceRecord | None = None, ui: Any = None, workers: int | None = None) -> None:
        self.source = source
        self.record = record
        self._stopping = threading.Event()
        self._api_client = api_client
        self._ui = ui  # gitops_kd.server.ui.UiSettings, or None: no /ui
        self.namespace = namespace
        self.scope = Scope.of(namespace)
        self._scoped: dict[str, tuple[DesiredState, Scoped]] = {}  # by commit: desired, restricted to the scope
        self._scope_logged: set[str] = set()  # commits whose out-of-scope objects were logged
        self._now = now
        self._planner = planner
        self._on_action = on_action
        self.collector = Collector(api_client, namespace=namespace)
        self.executor = Executor(api_client, now=now, reverter=self._push_revert)
        self.poller = Poller(source, self._on_poll, interval=poll_interval)
        self.per_key = _plans_parts(planner)
        self.workers = (workers or default_workers()) if self.per_key else 1
        self.queue = WorkQueue(self._reconcile, name="gitops-kd", workers=self.workers, base_delay=0.2, max_delay=30.0)
        self._plan_lock = threading.Lock()  # planners (the drift guard) are stateful: one plan at a time
        self._hold_lock = threading.Lock()
        self._fleet_due = False  # a fleet reconcile is scheduled after per-key actions
        self._fleet_seconds = 0.0  # how long the last fleet reconcile took
        self.metrics = metrics  # gitops_kd.server.metrics.ControllerMetrics, or None
        self.wave_soak_seconds = wave_soak_seconds
        self._webhook_secret = webhook_secret
        self.refusals = RefusalReporter(self.executor.events,
                                        on_refused=metrics.commit_refused if metrics is not None else None)
        self._lock = threading.RLock()
        self._candidate: DesiredState | None = None   # latest accepted commit from Git
        self._applied: DesiredState | None = None     # last commit whose plan was not refused
        self._marked: str | None = source.applied_commit
        self._hold: dict[Action, float] = {}
        self._noop: dict[str, Action] = {}  # per work key: the last action that changed nothing
        self._listen = listen
        self.http: HttpServer | None = None
        self._started = False
        self._errors_in_row = 0
        self._reported: dict[tuple[str, str], frozenset[tuple[str, str]]] = {}  # metric series per cluster
        self._polled = threading.Event()  # set by the first poll result: no plan from a stale commit before it
        # set by the first fleet reconcile after it: a part plans the commit the fleet chose, never the applied one
        # loaded at start (older than an accepted attempt whose KDApp KubeDirector refused: planning it flips)
        self._chosen = threading.Event()
        self.last_plan: Plan | None = None
        self.actions_executed = 0
        self._fence: Callable[[], bool] = lambda: True  # set_fence
        self.keeper = None if record is None else RecordKeeper(record, source, self.collector,
                                                               on_trusted=self._record_trusted)

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self, *, sync_timeout: float = 30.0) -> Controller:
        if self._started:
            return self
        self._started = True
        self.collector.on_change(self._on_change)
        for kind in ("apps", "clusters"):  # an object added or gone: prune and acceptance are the fleet's
            self.collector.informers[kind].add_handler(
                lambda event, _obj, _old: self.queue.add(KEY) if event != MODIFIED else None)
        self.collector.start()
        if not self.collector.wait_synced(sync_timeout):
            log.warning("informers not synced after %ss; continuing (reconciles wait for them)", sync_timeout)
        if not self._load_record():
            return self
        self.queue.start()
        if self.keeper is None or self.keeper.trusted:  # else the keeper starts them once the record checks out
            self._load_applied()
            self.poller.start()
        if self.keeper is not None:
            self.keeper.start()
        if self._listen is not None:
            app = make_app(self, webhook_secret=self._webhook_secret, branch=self.source.branch, metrics=self.metrics,
                           ui=self.ui_config())
            self.http = HttpServer(app, *self._listen).start()
        log.info("controller started: %s@%s, %s", self.source.url, self.source.branch, self.scope.describe())
        return self

    def stop(self) -> None:
        """Graceful stop: no new polls or actions; a running action completes first."""
        self._stopping.set()
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

    def __enter__(self) -> Controller:
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

    def may_act(self) -> bool:
        """The fence (set_fence; always True without one): others that write for this controller check it too."""
        return self._fence()

    def trigger_poll(self) -> None:
        """Poll Git now (push webhook)."""
        if self.poller.running:
            self.poller.trigger_now()

    @property
    def ready(self) -> bool:
        """Started, informers synced, Git polled, and fewer than NOT_READY_AFTER_FAILED_POLLS polls in a row
        failed to read the repository (liveness is not affected: restarting does not fix a Git outage)."""
        return (self._started and self.collector.wait_synced(0) and self.poller.polls > 0
                and getattr(self.source, "failing_polls", 0) < NOT_READY_AFTER_FAILED_POLLS)

    @property
    def healthy(self) -> bool:
        """False once UNHEALTHY_AFTER reconciles in a row raised (the API server or Git unusable for
        minutes, with the queue's backoff): a liveness probe then restarts the process."""
        return self._errors_in_row < UNHEALTHY_AFTER

    @property
    def desired(self) -> DesiredState | None:
        """The desired state being reconciled (the last commit whose plan was not refused)."""
        return self._applied

    def ui_config(self) -> Any:
        """The gitops_kd.server.ui.UiConfig for the HTTP app (None when the UI is off): reads with this
        controller's client, in its scope; Git facts from its source."""
        if self._ui is None or not self._ui.enabled:
            return None
        from gitops_kd.server.ui import ui_config

        return ui_config(self._ui, self._api_client, self.namespace, self.source, auth=self._ui.auth(),
                         record_namespace=self.record.namespace if self.record is not None else None)

    def kick(self) -> None:
        """Re-plan now (the whole fleet, which queues every key with work)."""
        self.queue.add(KEY)

    def enqueue(self, kind: str, key: tuple[str, str]) -> None:
        """Reconcile what a change of the KDCluster (kind "cluster") or KDApp ("app") ``key`` touches."""
        self._on_change(kind, key)

    # -- internals ---------------------------------------------------------------------------------
    def _push_revert(self, commit: str, reason: str) -> tuple[str, bool]:
        """failurePolicy revert-commit: push a revert of `commit` to the followed branch, then poll at once."""
        trust = getattr(self.source, "trust", None)
        if trust is not None and trust.verifies_signatures:
            raise RevertError("commit signatures are verified: gitops-kd's own revert would be unsigned and refused")
        result = push_revert_result(self.source, commit, message=reason)
        log.warning("revert %s of commit %s %s: %s", result.sha[:12], commit[:12],
                    "pushed" if result.pushed else "already on the branch", reason.splitlines()[0])
        self.trigger_poll()
        return result.sha, result.pushed

    def _load_record(self) -> bool:
        """Read the instance record until it works (False if stopped first); the keeper checks it before anything
        of it is adopted (controller/record_keeper.py)."""
        if self.record is None or self.keeper is None:
            return True
        while not self._stopping.is_set():
            try:
                self.record.load()
                break
            except Exception as exc:  # noqa: BLE001 - nothing is planned until the cluster's record is known
                log.warning("%s cannot be read (%s); not reconciling until it can", self.record.describe, exc)
                self._stopping.wait(RECORD_RETRY)
        else:
            return False
        if self.keeper.establish():
            recorded = self.record.record
            log.info("%s: applied %s, force-push baseline %s", self.record.describe, recorded.applied[:12] or "-",
                     recorded.baseline[:12] or "-")
        self._marked = None
        return True

    def _record_trusted(self) -> None:
        """The keeper found the record trustworthy after a stall: start from what it says was applied."""
        self._marked = None
        self._load_applied()
        self.poller.start()
        self.kick()

    def _load_applied(self) -> None:
        commit = self.source.applied_commit
        if commit and self.metrics is not None:
            self.metrics.set_applied_commit(commit)
        if commit and self._applied is None:
            try:
                self._applied = self.source.desired_at(commit)
            except Exception as exc:  # noqa: BLE001 - a vanished or now-invalid commit: start from the next one
                log.warning("applied commit %s cannot be read back (%s); waiting for the next accepted commit",
                            commit, exc)

    def _on_poll(self, result: PollResult) -> None:
        try:
            failed = not result.changed and not result.accepted and any(e.file == self.source.url
                                                                        for e in result.errors)
            if self.metrics is not None:
                self.metrics.record_poll(poll_result_label(changed=result.changed, accepted=result.accepted,
                                                           failed=failed))
                self.metrics.set_git_health(self.source.failing_polls, self.source.recoveries)
            self._record_poll(result, failed)
            if not result.accepted and not failed:  # a repository that cannot be read refuses no commit
                self.refusals.source_refused(result, self._collector_snapshot_or_none())
            elif result.desired is not None:
                with self._lock:
                    changed = self._candidate is None or self._candidate.commit != result.desired.commit
                    self._candidate = result.desired
                if changed:
                    log.info("commit %s accepted by the Git source", result.desired.commit[:12])
        finally:
            self._polled.set()  # only now: a fleet reconcile woken before this line would miss the candidate
            self.queue.add(KEY)

    def _record_poll(self, result: PollResult, failed: bool) -> None:
        """The poll's transition of the instance record (Git health, a refusal by the source)."""
        if self.record is None:
            return
        source, before = self.source, self.record.record
        if source.recoveries > before.recoveries:
            self.record.event(GIT_CACHE_RECOVERED, f"the local Git cache was corrupt and was cloned again: "
                              f"{source.last_recovery.splitlines()[0] if source.last_recovery else ''}", type_=WARNING)
        if failed and source.failing_polls == NOT_READY_AFTER_FAILED_POLLS:
            self.record.event(GIT_UNREADABLE, f"{source.failing_polls} polls in a row could not read {source.url}: "
                              f"{source.last_error.splitlines()[0] if source.last_error else ''}", type_=WARNING)
        changes: dict[str, Any] = {"git_failures": source.failing_polls, "git_error": source.last_error,
                                   "recoveries": source.recoveries, "kubedirector": self.collector.flavour.describe()}
        if result.changed and not result.accepted and not failed:
            changes.update(attempted=result.commit, refusal="\n".join(str(e) for e in result.errors))
        self.record.update(**changes)

    def _collector_snapshot_or_none(self) -> Any:
        try:
            return self.collector.snapshot()
        except Exception:  # noqa: BLE001 - only used to address Events
            return None

    def _plan(self, desired: DesiredState, observed: Any) -> Plan:
        scoped = self._in_scope(desired)
        planner = self._planner
        if planner is None:
            planner = make_plan
        if self._planner is None:
            plan = planner(scoped.desired, observed, now=self._now(), wave_soak_seconds=self.wave_soak_seconds)
        else:
            plan = planner(scoped.desired, observed, now=self._now())  # a given planner carries its own options
        return scoped.restrict_plan(plan)

    def _in_scope(self, desired: DesiredState) -> Scoped:
        """`desired` restricted to the scope (cached per desired state); its skipped objects logged once per commit."""
        cached = self._scoped.get(desired.commit)
        if cached is not None and cached[0] is desired:
            return cached[1]
        scoped = restrict(desired, self.scope)
        if len(self._scoped) >= 4:
            self._scoped.clear()
        self._scoped[desired.commit] = (desired, scoped)
        if desired.commit not in self._scope_logged and (line := scoped.log_line()) is not None:
            self._scope_logged.add(desired.commit)
            log.warning("%s", line)
        return scoped

    def _on_change(self, kind: str, key: tuple[str, str]) -> None:
        """A watched object changed: queue its cluster's key, or an app's key and its users' keys."""
        if not self.per_key:
            self.queue.add(KEY)
            return
        if kind != APP:
            self.queue.add(str(cluster_key(key)))
            return
        self.queue.add(str(app_key(key)))
        with self._lock:
            desired = self._applied
        live = self.collector.index.clusters_using(key[1])
        wanted = users(desired, key[1]) if desired is not None and key in desired.apps else frozenset()
        for user in live | wanted:
            self.queue.add(str(cluster_key(user)))

    def _reconcile(self, key: str) -> None:
        try:
            if self.metrics is None:
                self._reconcile_key(key)
            else:
                with self.metrics.reconcile_timer() as result:
                    try:
                        self._reconcile_key(key)
                    except RequeueAfter:
                        result["result"] = "requeue"
                        raise
        except RequeueAfter:
            self._errors_in_row = 0
            raise
        except Exception:
            self._errors_in_row += 1
            raise
        self._errors_in_row = 0

    def _reconcile_key(self, key: str) -> None:
        if self.keeper is not None:
            self.keeper.gate()  # no plan from a record not trusted, nor while the cluster's lags what was applied
        if not self.collector.wait_synced(0) or not self._polled.is_set():
            # Before the first poll the last applied commit may be older than one already started (a commit
            # whose KDApp KubeDirector refused is accepted, not applied): planning it would flip the rollout.
            raise RequeueAfter(REQUEUE_NOT_SYNCED)
        work = WorkKey.parse(key)
        if work.kind == FLEET:
            self._reconcile_fleet()
        elif not self._chosen.is_set():
            raise RequeueAfter(REQUEUE_NOT_SYNCED)
        else:
            self._reconcile_part(work)

    def _reconcile_fleet(self) -> None:
        """Plan the whole desired state: accept a new commit, record, prune; queue every key with work."""
        started = time.monotonic()
        try:
            self._fleet()
        finally:
            with self._hold_lock:
                self._fleet_due = False
                self._fleet_seconds = time.monotonic() - started

    def _schedule_fleet(self) -> None:
        """After a per-key action: a fleet reconcile soon, but never more than FLEET_SHARE of the time."""
        with self._hold_lock:
            if self._fleet_due:
                return
            self._fleet_due = True
            delay = max(FLEET_DEBOUNCE, self._fleet_seconds / FLEET_SHARE)
        self.queue.add_after(KEY, delay)

    def _fleet(self) -> None:
        with self._lock:
            candidate = self._candidate
        observed = self.collector.snapshot()
        with self._plan_lock:
            desired, plan = self._choose(candidate, observed)
        self._chosen.set()
        if desired is None and plan is not None:  # refused: the fleet stalls rollouts Ready over pods off version
            self._act(KEY, plan, IDLE_RESYNC)
            return
        if desired is None or plan is None:
            return
        self.last_plan = plan
        if self.record is not None and desired.commit == self.record.record.applied:
            self.record.update(in_sync=plan.empty)
        self._report_phases(observed)
        self._maybe_mark_applied(desired, plan)
        if self.keeper is not None:
            self.keeper.gate()  # the record of this plan's commit landed before any step of it runs
        if self.per_key:
            for work in {owner(a) for a in plan.actions if not isinstance(a, Wait)} - {FLEET_KEY}:
                self.queue.add(str(work))
            plan = Plan(tuple(a for a in plan.actions if owner(a) == FLEET_KEY), plan.refusals, plan.kept)
        self._act(KEY, plan, IDLE_RESYNC)

    def _reconcile_part(self, work: WorkKey) -> None:
        """Plan one KDCluster or KDApp from the index and run its next action (ApplyApp is the app key's)."""
        with self._lock:
            desired = self._applied
        if desired is None:
            return
        scoped = self._in_scope(desired)
        part = (app_part if work.kind == APP else cluster_part)(scoped.desired, work.key)
        if part is None:
            return  # not in Git (or outside the scope): prune is the fleet's
        observed = self.collector.snapshot_of(part.clusters | self.collector.index.clusters_using(part.app_name),
                                              (part.app_name,))
        with self._plan_lock:
            plan = scoped.restrict_plan(self._plan_part(part, observed))
        if plan.refused:
            self._schedule_fleet()  # the fleet reconcile reports refusals
            return
        if work.kind == APP:
            self._act_for_app(work, plan)
            return
        mine = tuple(a for a in plan.actions if owner(a) == work or isinstance(a, ApplyApp))
        self._act(str(work), Plan(mine), None)

    def _act_for_app(self, work: WorkKey, plan: Plan) -> None:
        """An app key applies its KDApp once it is the next action of its part (after each user's
        EnsureRollout); a user's action before it is that user's: wake its key."""
        if not any(isinstance(a, ApplyApp) and owner(a) == work for a in plan.actions):
            return
        choice = self._select(plan)
        if choice.action is None:
            raise RequeueAfter(choice.requeue_after if choice.requeue_after is not None else IDLE_RESYNC)
        if owner(choice.action) != work:
            self.queue.add(str(owner(choice.action)))
            return
        self._act(str(work), plan, IDLE_RESYNC)

    def _plan_part(self, part: Part, observed: Any) -> Plan:
        planner = self._planner
        if planner is None:
            return make_plan(part.desired, observed, now=self._now(), wave_soak_seconds=self.wave_soak_seconds,
                             partial=True)
        return planner(part.desired, observed, now=self._now(), partial=True)

    def _select(self, plan: Plan) -> Any:
        mono = time.monotonic()
        with self._hold_lock:
            self._hold = {a: t for a, t in self._hold.items() if t > mono}
            return select(plan, dict(self._hold), mono)

    def _act(self, key: str, plan: Plan, idle: float | None) -> None:
        """Execute the next runnable action of ``plan`` for work key ``key``; with none, look again after the
        plan's shortest wait, else ``idle`` seconds (None: only when something changes)."""
        choice = self._select(plan)
        if choice.action is None:
            after = choice.requeue_after if choice.requeue_after is not None else idle
            if after is not None:
                raise RequeueAfter(after)
            return
        if self.per_key and isinstance(choice.action, ApplyApp) and owner(choice.action) != WorkKey.parse(key):
            self.queue.add(str(owner(choice.action)))  # the app key applies it; this key waits for its change
            raise RequeueAfter(IDLE_RESYNC)
        try:
            outcome = self.executor.execute(choice.action)
        except NotLeading as exc:
            log.warning("%s", exc)
            raise RequeueAfter(FENCED_RETRY) from exc
        except Exception:
            self._count_step(choice.action, "error")
            raise
        self._count_step(choice.action, "failed" if outcome.failed else ("success" if outcome.changed else "noop"))
        self.actions_executed += 1
        if self._on_action is not None:
            self._on_action(choice.action, outcome)
        if outcome.expect and not self.collector.wait_for(outcome.expect, READ_YOUR_WRITES_TIMEOUT):
            log.warning("cache did not show the effect of '%s' within %ss", choice.action.describe(),
                        READ_YOUR_WRITES_TIMEOUT)
        with self._hold_lock:
            if outcome.requeue_after is not None and (outcome.failed or not outcome.changed):
                self._hold[choice.action] = time.monotonic() + outcome.requeue_after
            elif not outcome.changed and not outcome.failed:
                # Already done, yet planned: the cache may lag (it catches up and re-plans) or the plan and the
                # cluster disagree. Either way do not spin on it: hold this exact action for a moment.
                if self._noop.get(key) == choice.action:
                    log.warning("'%s' planned again although its effect is there (%s)", choice.action.describe(),
                                outcome.message)
                self._noop[key] = choice.action
                self._hold[choice.action] = time.monotonic() + NOOP_HOLD
            if outcome.changed:
                self._noop.pop(key, None)
        self.queue.add(key)
        if key != KEY:
            self._schedule_fleet()

    def _choose(self, candidate: DesiredState | None, observed: Any) -> tuple[DesiredState | None, Plan | None]:
        """Plan the newest accepted commit; if the plan refuses it, keep reconciling the last applied one; if that
        is refused too, (None, the Stalls of rollouts Ready over pods of another version) or (None, None)."""
        if candidate is not None and (self._applied is None or candidate.commit != self._applied.commit):
            plan = self._plan(candidate, observed)
            if not plan.refused:
                log.info("commit %s: plan accepted (%d action(s))", candidate.commit[:12], len(plan.actions))
                self._applied = candidate
                self.source.set_baseline(candidate.commit)
                if self.record is not None:
                    self.record.update(applied=candidate.commit, applied_subject=self.source.subject(candidate.commit),
                                       attempted=candidate.commit, refusal="", baseline=candidate.commit,
                                       in_sync=plan.empty)
                return candidate, plan
            self.refusals.plan_refused(candidate, plan, observed)
            if self.record is not None:
                self.record.update(attempted=candidate.commit,
                                   refusal="\n".join(r.describe() for r in plan.refusals))
        if self._applied is None:
            return None, None
        plan = self._plan(self._applied, observed)
        if plan.refused:  # the live cluster moved under us: report, write nothing but plan/truth.py's Stalls
            self.refusals.plan_refused(self._applied, plan, observed)
            return None, (Plan(plan.actions) if plan.actions else None)
        return self._applied, plan

    def _maybe_mark_applied(self, desired: DesiredState, plan: Plan) -> None:
        """mark_applied once no ApplyApp/ApplyCluster/Prune of the commit is left to execute."""
        if self._marked == desired.commit:
            return
        if any(isinstance(a, (ApplyApp, ApplyCluster, Prune)) for a in plan.actions):
            return
        self.source.mark_applied(desired.commit)
        self._marked = desired.commit
        if self.metrics is not None:
            self.metrics.set_applied_commit(desired.commit)

    def _count_step(self, action: Action, result: str) -> None:
        if self.metrics is not None and not isinstance(action, Wait):
            self.metrics.upgrade_step(type(action).__name__, result)

    def _report_phases(self, observed: Any) -> None:
        """Rollout phase series of every cluster; the series of a cluster gone from the cluster (phase and the
        drift series of it and its objects) are removed, not left behind at their last value."""
        if self.metrics is None:
            return
        seen: dict[tuple[str, str], frozenset[tuple[str, str]]] = {}
        for (namespace, name), cluster in observed.clusters.items():
            phase = cluster.rollout.phase if cluster.rollout is not None else ""
            if phase in ROLLOUT_PHASES:
                self.metrics.set_rollout_phase(namespace, name, phase)
            seen[(namespace, name)] = frozenset(
                [(KDCLUSTER_KIND, name)] + [(STATEFULSET, s.name) for s in cluster.statefulsets.values()]
                + [(SERVICE, s.name) for s in cluster.services])
        for (namespace, name) in self._reported.keys() - seen.keys():
            self.metrics.forget_rollout(namespace, name)
            for kind, obj in self._reported[(namespace, name)]:
                self.metrics.forget_object(kind, namespace, obj)
        self._reported = seen
