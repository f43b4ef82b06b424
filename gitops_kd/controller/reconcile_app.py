"""The KDApp key's reconciler: apply its KDApp once that is the next action of its part."""

from __future__ import annotations

from gitops_kd.controller.acting import DONE, IDLE_RESYNC, Result
from gitops_kd.controller.reconcile_part import PartReconciler
from gitops_kd.plan.actions import ApplyApp, Plan
from gitops_kd.plan.focus import WorkKey, app_part, owner


class AppReconciler(PartReconciler):
    """An app key applies its KDApp once it is the next action of its part (after each user's EnsureRollout); a
    user's action before it is that user's: wake its key."""

    part_of = staticmethod(app_part)

    def act(self, work: WorkKey, plan: Plan) -> Result:
        if not any(isinstance(a, ApplyApp) and owner(a) == work for a in plan.actions):
            return DONE
        choice = self._actor.select(plan)
        if choice.action is None:
            return Result(choice.requeue_after if choice.requeue_after is not None else IDLE_RESYNC)
        if owner(choice.action) != work:
            self._actor.wake(owner(choice.action))
            return DONE
        return self._actor.act(str(work), plan, IDLE_RESYNC)
