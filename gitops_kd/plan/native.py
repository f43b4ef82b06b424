"""The steps before a native upgrade's switch on KubeDirector's live-app-upgrade branch (pure).

A cluster whose spec.app Git moves to another KDApp (diff/switch.py) gets, in this order and each once observed:
its attempt recorded (EnsureRollout, planned with the others), every role StatefulSet OnDelete (so the image
KubeDirector patches in rolls no pod: gitops-kd replaces them in its role order, with its gates, hooks and data
rules), the app it leaves marked `upgradable` (MarkUpgradable), the target KDApp applied from Git, the cluster
`configured` (or the switch is the branch's rollback), and only then SwitchApp. Until the switch no template is
patched and no pod replaced; after it the cluster is an ordinary upgrade (or downgrade) of the target app.
"""

from __future__ import annotations

from gitops_kd.diff.switch import Switch
from gitops_kd.kd.app_switch import UPGRADABLE, busy
from gitops_kd.observed import ON_DELETE, ObservedCluster, ObservedState
from gitops_kd.plan.actions import Action, EnsureRollout, MarkUpgradable, SetOnDelete, SwitchApp, Wait
from gitops_kd.plan.pods import POLL_SECONDS


def switch_steps(
    switch: Switch,
    live: ObservedCluster,
    observed: ObservedState,
    ensure: EnsureRollout | None,
    *,
    target_pending: bool,
    digest: str,
) -> list[Action]:
    """What cluster ``live`` does next towards ``switch`` (``target_pending``: Git's target KDApp is not applied yet;
    ``digest``: Git's manifest digest the switch stamps)."""
    ns, name = live.key
    out: list[Action] = [
        SetOnDelete(ns, sts.name, rid, name) for rid, sts in sorted(live.statefulsets.items()) if sts.update_strategy != ON_DELETE
    ]
    if ensure is not None or live.rollout is None:
        return [*out, _wait(live, "the attempt to be recorded before the switch")]
    running = observed.apps.get(switch.running)
    if running is None:  # a per-cluster reconcile does not observe it: the fleet reconcile switches
        return [*out, _wait(live, f"KDApp {switch.running[1]} (the app it leaves) to be read")]
    if running.spec.get(UPGRADABLE) is not True:
        out.append(MarkUpgradable(ns, switch.running[1], name))
    if target_pending or switch.target not in observed.apps:
        return [*out, _wait(live, f"KDApp {switch.target[1]} to be applied from Git")]
    if busy(live.raw.get("status") or {}, switch.target[1]):
        return [*out, _wait(live, "KubeDirector to report the cluster configured (it takes a switch then)")]
    if out:
        return out
    return [SwitchApp(ns, name, switch.target[1], switch.running[1], digest)]


def _wait(live: ObservedCluster, what: str) -> Wait:
    return Wait(what, POLL_SECONDS, live.key)


__all__ = ["switch_steps"]
