"""The fleet key's reconciler: accept a new commit, record it, prune, report; queue every key with work."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from gitops_kd.controller.acting import DONE, IDLE_RESYNC, KEY, Actor, Result
from gitops_kd.controller.commits import Commits
from gitops_kd.controller.instance import InstanceRecord
from gitops_kd.controller.phases import PhaseReport
from gitops_kd.controller.planning import Planning
from gitops_kd.controller.record_keeper import RecordKeeper
from gitops_kd.controller.refusals import RefusalReporter
from gitops_kd.controller.refused_writes import RefusedWrites
from gitops_kd.observe.collector import Collector
from gitops_kd.plan.actions import ApplyApp, ApplyCluster, Plan, Prune, Wait
from gitops_kd.plan.focus import FLEET_KEY, WorkKey, owner
from gitops_kd.source import DesiredState, GitSource
from gitops_kd.status.source import held_clusters
from kubeplumb.workqueue import WorkQueue

log = logging.getLogger(__name__)

FLEET_DEBOUNCE = 1.0  # seconds after a per-key action before the fleet reconcile looks again (at least)
FLEET_SHARE = 0.1  # ... and at most this share of the time goes to whole-fleet plans while keys are busy
IDLE_SHARE = 0.02  # at most this share of the time goes to the idle resync's whole-fleet plans (a large fleet's)

Owns = Callable[[WorkKey], bool]  # does this instance reconcile this work key (sharding; default: every key)


class FleetReconciler:
    """Plans the whole desired state when Git or the set of objects changes. In per-key mode it runs only the
    fleet key's own actions (prune, records) and queues each owned key with work; in fleet mode, every action."""

    def __init__(
        self,
        *,
        commits: Commits,
        planning: Planning,
        collector: Collector,
        actor: Actor,
        queue: WorkQueue,
        source: GitSource,
        refusals: RefusalReporter,
        record: InstanceRecord | None,
        keeper: RecordKeeper | None,
        metrics: Any,
        per_key: bool,
        owns: Owns,
        refused: RefusedWrites | None = None,
    ) -> None:
        self._commits, self._planning, self._collector, self._actor = commits, planning, collector, actor
        self._queue, self._source, self._refusals = queue, source, refusals
        self._record, self._keeper, self._metrics = record, keeper, metrics
        self._per_key, self.owns = per_key, owns
        self._refused = refused  # the applied commit's refused writes: forgotten once the plan no longer has them
        self._phases = PhaseReport(metrics)
        self._lock = threading.Lock()
        self._due = False  # a fleet reconcile is scheduled after per-key actions
        self._seconds = 0.0  # how long the last fleet reconcile took
        self._began = 0.0  # when the running fleet reconcile began
        self.last_plan: Plan | None = None

    def reconcile(self) -> Result:
        """Plan the whole desired state: accept a new commit, record, prune; queue every key with work."""
        started = self._began = time.monotonic()
        try:
            return self._reconcile()
        finally:
            with self._lock:
                self._due = False
                self._seconds = time.monotonic() - started

    def schedule(self) -> None:
        """After a per-key action: a fleet reconcile soon, but never more than FLEET_SHARE of the time."""
        with self._lock:
            if self._due:
                return
            self._due = True
            delay = max(FLEET_DEBOUNCE, self._seconds / FLEET_SHARE)
        self._queue.add_after(KEY, delay)

    def _reconcile(self) -> Result:
        with self._commits.lock:
            candidate = self._commits.candidate
        observed = self._collector.snapshot()
        with self._planning.lock:
            desired, plan = self._choose(candidate, observed)
        self._commits.chosen.set()
        if desired is None and plan is not None:  # refused: the fleet stalls rollouts Ready over pods off version
            return self._actor.act(KEY, plan, self._idle())
        if desired is None or plan is None:
            return DONE
        self.last_plan = plan
        if self._refused is not None:
            self._refused.retain(plan)
        if self._record is not None and desired.commit == self._record.record.applied:
            self._record.update(in_sync=plan.empty, **held_clusters(observed))
        self._phases.report(observed)
        self._maybe_mark_applied(desired, plan)
        if self._keeper is not None:
            self._keeper.gate()  # the record of this plan's commit landed before any step of it runs
        if self._per_key:
            for work in {owner(a) for a in plan.actions if not isinstance(a, Wait)} - {FLEET_KEY}:
                if self.owns(work):
                    self._queue.add(str(work))
            plan = Plan(tuple(a for a in plan.actions if owner(a) == FLEET_KEY), plan.refusals, plan.kept)
        return self._actor.act(KEY, plan, self._idle())

    def _idle(self) -> float:
        """Seconds before the idle fleet key looks again: IDLE_RESYNC, or longer once a whole-fleet plan costs more
        than IDLE_SHARE of it (thousands of clusters). Changes wake the fleet key sooner: a commit, an object added or
        gone, per-key work (``schedule``), a plan's own waits and holds."""
        return max(IDLE_RESYNC, (time.monotonic() - self._began) / IDLE_SHARE)

    def _choose(self, candidate: DesiredState | None, observed: Any) -> tuple[DesiredState | None, Plan | None]:
        """Plan the newest accepted commit; if the plan refuses it, keep reconciling the last applied one; if that
        is refused too, (None, the Stalls of rollouts Ready over pods of another version) or (None, None)."""
        applied = self._commits.applied
        if candidate is not None and (applied is None or candidate.commit != applied.commit):
            plan = self._planning.fleet(candidate, observed)
            if not plan.refused:
                log.info("commit %s: plan accepted (%d action(s))", candidate.commit[:12], len(plan.actions))
                with self._commits.lock:
                    self._commits.applied = candidate
                self._source.set_baseline(candidate.commit)
                if self._record is not None:
                    self._record.update(
                        applied=candidate.commit,
                        attempted=candidate.commit,
                        refusal="",
                        applied_subject=self._source.subject(candidate.commit),
                        baseline=candidate.commit,
                        in_sync=plan.empty,
                    )
                return candidate, plan
            self._refusals.plan_refused(candidate, plan, observed)
            if self._record is not None:
                self._record.update(attempted=candidate.commit, refusal="\n".join(r.describe() for r in plan.refusals))
        if applied is None:
            return None, None
        plan = self._planning.fleet(applied, observed)
        if plan.refused:  # the live cluster moved under us: report, write nothing but plan/truth.py's Stalls
            self._refusals.plan_refused(applied, plan, observed)
            return None, (Plan(plan.actions) if plan.actions else None)
        return applied, plan

    def _maybe_mark_applied(self, desired: DesiredState, plan: Plan) -> None:
        """mark_applied once no ApplyApp/ApplyCluster/Prune of the commit is left to execute."""
        if self._commits.marked == desired.commit:
            return
        if any(isinstance(a, (ApplyApp, ApplyCluster, Prune)) for a in plan.actions):
            return
        self._source.mark_applied(desired.commit)
        self._commits.marked = desired.commit
        if self._metrics is not None:
            self._metrics.set_applied_commit(desired.commit)
