"""The KDCluster key's reconciler: run its cluster's next action (and an ApplyApp its part needs first)."""

from __future__ import annotations

from gitops_kd.controller.acting import Result
from gitops_kd.controller.reconcile_part import PartReconciler
from gitops_kd.plan.actions import ApplyApp, Plan
from gitops_kd.plan.focus import WorkKey, cluster_part, owner


class ClusterReconciler(PartReconciler):
    """Plans one KDCluster from the index; its actions and the ApplyApp of its app are runnable from it (the
    actor hands an ApplyApp to the app's key)."""

    part_of = staticmethod(cluster_part)

    def act(self, work: WorkKey, plan: Plan) -> Result:
        mine = tuple(a for a in plan.actions if owner(a) == work or isinstance(a, ApplyApp))
        return self._actor.act(str(work), Plan(mine), None)
