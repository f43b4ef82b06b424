"""The part a KDCluster or KDApp key plans: its slice of the applied commit, against the informers' index."""

from __future__ import annotations

from collections.abc import Callable

from gitops_kd.controller.acting import DONE, Actor, Result
from gitops_kd.controller.commits import Commits
from gitops_kd.controller.planning import Planning
from gitops_kd.observe.collector import Collector
from gitops_kd.plan.actions import Plan
from gitops_kd.plan.focus import Part, WorkKey
from gitops_kd.spec.state import DesiredState, Key

PartOf = Callable[[DesiredState, Key], Part | None]  # plan/focus.py's cluster_part or app_part


class PartReconciler:
    """What a cluster and an app reconciler share: plan the key's part; a refused part wakes the fleet key (which
    reports refusals) instead of acting. Subclasses say which part (``part_of``) and act on its plan."""

    part_of: PartOf

    def __init__(
        self, *, commits: Commits, planning: Planning, collector: Collector, actor: Actor, schedule_fleet: Callable[[], None]
    ) -> None:
        self._commits, self._planning, self._collector = commits, planning, collector
        self._actor, self._schedule_fleet = actor, schedule_fleet

    def reconcile(self, work: WorkKey) -> Result:
        plan = self._plan(work)
        return DONE if plan is None else self.act(work, plan)

    def act(self, work: WorkKey, plan: Plan) -> Result:
        raise NotImplementedError

    def _plan(self, work: WorkKey) -> Plan | None:
        """The key's plan (None: nothing to do here: not in Git, outside the scope, or refused)."""
        desired = self._commits.current()
        if desired is None:
            return None
        scoped = self._planning.in_scope(desired)
        part = type(self).part_of(scoped.desired, work.key)
        if part is None:
            return None  # not in Git (or outside the scope): prune is the fleet's
        observed = self._collector.snapshot_of(
            part.clusters | self._collector.index.clusters_using(part.app_name), (part.app_name,)
        )
        with self._planning.lock:
            plan = scoped.restrict_plan(self._planning.plan(part.desired, observed, partial=True))
        if plan.refused:
            self._schedule_fleet()  # the fleet reconcile reports refusals
            return None
        return plan
