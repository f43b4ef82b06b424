"""MarkUpgradable / SwitchApp: the two KubeDirector writes of a native upgrade on its live-app-upgrade branch (the app
left marked `upgradable`, then the cluster's spec.app alone switched); each a no-op when its effect is there, and a
refusal by KubeDirector's webhook a Warning Event and a failed Outcome retried later."""

from __future__ import annotations

from gitops_kd.constants import APPLIED_ANNOTATION, StallReason
from gitops_kd.execute.apply import refusable
from gitops_kd.execute.context import ExecContext, rv
from gitops_kd.execute.outcome import Outcome
from gitops_kd.kd.app_switch import UPGRADABLE
from gitops_kd.kd.layout import API_VERSION, KDAPP_KIND, KDAPP_PLURAL, KDCLUSTER_KIND, KDCLUSTER_PLURAL
from gitops_kd.observe.collector import Expectation
from gitops_kd.plan.actions import MarkUpgradable, SwitchApp
from gitops_kd.status import events as ev


def mark_upgradable(ctx: ExecContext, action: MarkUpgradable) -> Outcome:
    def call() -> Outcome:
        app = ctx.rest.get(API_VERSION, KDAPP_PLURAL, action.namespace, action.app)
        if (app.get("spec") or {}).get(UPGRADABLE) is True:
            return Outcome(action.describe(), False, "already upgradable")
        app["spec"] = {**(app.get("spec") or {}), UPGRADABLE: True}  # an update (deploy/ RBAC), guarded by its rv
        patched = ctx.rest.replace(API_VERSION, KDAPP_PLURAL, action.namespace, action.app, app)
        return Outcome(
            action.describe(),
            True,
            "spec.upgradable set",
            expect=(Expectation(KDAPP_PLURAL, action.namespace, action.app, rv(patched)),),
        )

    return refusable(ctx, KDAPP_KIND, action.namespace, action.app, action.describe(), StallReason.APPLY_FAILED, call)


def switch_app(ctx: ExecContext, action: SwitchApp) -> Outcome:
    def call() -> Outcome:
        live = ctx.rest.get(API_VERSION, KDCLUSTER_PLURAL, action.namespace, action.cluster)
        if (live.get("spec") or {}).get("app") == action.app:
            return Outcome(action.describe(), False, f"already at app {action.app}")
        meta = live.setdefault("metadata", {})
        if action.digest:
            meta["annotations"] = {**(meta.get("annotations") or {}), APPLIED_ANNOTATION: action.digest}
        live["spec"] = {**live["spec"], "app": action.app}  # the app alone (the branch refuses more), its rv kept
        patched = ctx.rest.replace(API_VERSION, KDCLUSTER_PLURAL, action.namespace, action.cluster, live)
        ctx.event_on_cluster(
            action.namespace,
            action.cluster,
            ev.APP_SWITCHED,
            f"spec.app {action.previous} -> {action.app} (KubeDirector's live-app-upgrade path)",
        )
        return Outcome(
            action.describe(),
            True,
            f"spec.app switched to {action.app}",
            expect=(Expectation(KDCLUSTER_PLURAL, action.namespace, action.cluster, rv(patched)),),
        )

    return refusable(ctx, KDCLUSTER_KIND, action.namespace, action.cluster, action.describe(), StallReason.APPLY_FAILED, call)


__all__ = ["mark_upgradable", "switch_app"]
