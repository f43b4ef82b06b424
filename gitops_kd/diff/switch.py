"""A KDCluster whose `spec.app` Git moves to another KDApp: on KubeDirector's live-app-upgrade branch its native
upgrade (a switch of `spec.app`), judged with the branch's rules before anything is written (pure).

On stock KubeDirector (and an unknown one) `spec.app` stays read-only (diff/refusals.py cluster_refusals). On the
branch the switch is refused only with the branch's own answer (gitops_kd/kd/app_switch.py), when Git's commit
changes more of the cluster than its app (the branch takes the switch alone), or when the target has no from[]
rule for the version the cluster runs (a downgrade: no downgrade.to rule in the stanza being left), as for an
in-use KDApp's version change on stock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitops_kd.diff.fields import contains
from gitops_kd.diff.model import Refusal
from gitops_kd.diff.refusals import version_refusals
from gitops_kd.diff.transition import running_version
from gitops_kd.kd import app_switch
from gitops_kd.kd.flavour import LIVE_UPGRADE
from gitops_kd.kd.layout import KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.kd.normalize import stored_spec
from gitops_kd.observed import ObservedApp, ObservedCluster, ObservedState
from gitops_kd.spec.freeze import thaw
from gitops_kd.spec.model import KDApp, KDCluster
from gitops_kd.spec.state import DesiredState, Key


@dataclass(frozen=True)
class Switch:
    """Cluster ``cluster`` runs KDApp ``running`` and Git names ``target`` (same namespace); ``rollback`` when the
    branch takes it as its rollback (back to status.upgradeInfo.prevApp)."""

    cluster: Key
    running: Key
    target: Key
    rollback: bool


def native(observed: ObservedState) -> bool:
    """True when the installed KubeDirector is the live-app-upgrade branch (its native path is used)."""
    return observed.flavour == LIVE_UPGRADE


def switch_of(desired: DesiredState, observed: ObservedState, key: Key) -> Switch | None:
    """The switch Git asks of live cluster ``key`` on the branch, or None (no switch, or not the branch)."""
    cluster, live = desired.clusters.get(key), observed.clusters.get(key)
    if cluster is None or live is None or live.app == cluster.app or not native(observed):
        return None
    local = (key[0], cluster.app)  # the target as the diff finds it: in the cluster's namespace, else the first
    target = local if local in desired.apps else next((k for k in sorted(desired.apps) if k[1] == cluster.app), local)
    return Switch(key, (key[0], live.app), target, app_switch.rollback(_status(live), cluster.app))


def _status(live: ObservedCluster) -> dict[str, Any]:
    return dict(thaw(live.raw.get("status") or {}))


def _git_spec(app: KDApp) -> dict[str, Any]:
    return stored_spec(KDAPP_KIND, app.cluster_manifest().get("spec") or {})


def switch_refusals(desired: DesiredState, observed: ObservedState, switch: Switch) -> list[Refusal]:
    """Why the branch (or the target's upgrade stanza) refuses ``switch``; empty when it may run. Nothing is said
    when the app the cluster runs is not observed (KubeDirector answers the write then)."""
    cluster, live = desired.clusters[switch.cluster], observed.clusters[switch.cluster]
    target, running = desired.apps.get(switch.target), observed.apps.get(switch.running)
    if target is None or running is None:
        return []  # a missing target is the diff's refusal already; the running app is not in this snapshot
    out = _refused(cluster, live, f"switching its app from {live.app} to {cluster.app}", _errors(desired, switch, live, running))
    if not out and not switch.rollback:
        version = running_version(target.version, running, live)
        if version is not None:
            out += version_refusals(target, running, version, [live])
    return out


def _errors(desired: DesiredState, switch: Switch, live: ObservedCluster, running: ObservedApp) -> list[str]:
    cluster, target = desired.clusters[switch.cluster], desired.apps[switch.target]
    want = {**stored_spec(KDCLUSTER_KIND, cluster.frozen_body.get("spec") or {}), "app": live.app}
    if not contains(live.spec, want):
        return [app_switch.NOT_ONLY_APP]
    git_running = desired.apps.get(switch.running)
    may_mark = git_running is None or git_running.frozen_body.get("spec", {}).get(app_switch.UPGRADABLE) is not False
    return app_switch.switch_errors(
        _status(live),
        thaw(running.spec),
        _git_spec(target),
        running_name=switch.running[1],
        target_name=switch.target[1],
        may_mark=may_mark,
    )


def one_way(switch: Switch, running_version: str, target_version: str) -> str:
    """The warning a reviewer gets before merging ``switch`` (not the branch's rollback): a sentence saying that
    `git revert` rolls it back only while KubeDirector's upgrade is in progress, KubeDirector's own refusal after
    that, and what can be done instead."""
    running, target = switch.running[1], switch.target[1]
    refusal = app_switch.NOT_NEWER.format(new=running_version, old=target_version)
    return (
        f"switching spec.app from {running} to {target} is KubeDirector's native upgrade (its live-app-upgrade branch), "
        f"and it is one way: `git revert` switches back to {running} only while KubeDirector's upgrade is in progress "
        f"(its rollback to status.upgradeInfo.prevApp); once KubeDirector has finished it, it refuses the revert: "
        f'"{refusal}" Instead, roll forward: commit a new KDApp with a version newer than {target_version} that differs '
        f"from {target} only in its roles' images (e.g. {running}'s) and cardinality, and switch the cluster to it"
    )


def _refused(cluster: KDCluster, live: ObservedCluster, what: str, errors: list[str]) -> list[Refusal]:
    return [
        Refusal(cluster.source, "spec.app", f'{what}: KubeDirector\'s live-app-upgrade branch refuses it: "{error}"')
        for error in errors
    ]


__all__ = ["Switch", "native", "one_way", "switch_of", "switch_refusals"]
