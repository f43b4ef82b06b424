"""Suspended clusters (KDRollout spec.suspend, set by `gitops-kd suspend`): no action, a note and a Wait (pure)."""

from __future__ import annotations

from collections.abc import Iterable

from gitops_kd.observed import ObservedState
from gitops_kd.plan.actions import Action, ApplyApp, EnsureRollout, NoteStep, Wait

SUSPENDED_STEP = "suspended by an operator: run `gitops-kd resume` to go on"
SUSPEND_RECHECK_SECONDS = 60.0  # a resume is a watch event on the KDRollout: this is only a safety net


def hold_suspended(actions: Iterable[Action], observed: ObservedState) -> list[Action]:
    """``actions`` without those of suspended clusters; for each of them a NoteStep (until noted) and a Wait.
    A cluster resumed while its note is still there gets the note cleared.

    A suspended cluster whose rollout has not yet recorded the version being left (its EnsureRollout is held)
    holds its app's new version whole: no ApplyApp (the KDApp moves only after every user recorded the version
    being left, whose stanza gives a downgrade its data rules, as when nothing is suspended) and no action on the
    app's other clusters (their templates are not moved under an app KubeDirector still has at the old version)."""
    out: list[Action] = []
    suspended: set[tuple[str, str]] = set()
    for key, live in sorted(observed.clusters.items()):
        ro = live.rollout
        if ro is None:
            continue
        if ro.suspended:
            suspended.add(key)
            if ro.step != SUSPENDED_STEP:
                out.append(NoteStep(key[0], key[1], SUSPENDED_STEP))
            out.append(Wait(f"cluster {key[0]}/{key[1]} to be resumed (gitops-kd resume)", SUSPEND_RECHECK_SECONDS, key))
        elif ro.step == SUSPENDED_STEP:
            out.append(NoteStep(key[0], key[1], None))
    listed = list(actions)
    if not suspended and not out:
        return listed
    held = {(a.namespace, a.app, a.cluster) for a in listed if isinstance(a, EnsureRollout) and a.cluster_key in suspended}
    apps = {(ns, app): cluster for ns, app, cluster in sorted(held)}
    waiting = {
        key: apps[(key[0], live.app)]
        for key, live in observed.clusters.items()
        if (key[0], live.app) in apps and key not in suspended
    }
    for ns, app, cluster in sorted(held):
        out.append(
            Wait(
                f"KubeDirectorApp {ns}/{app} is applied once cluster {ns}/{cluster} is resumed",
                SUSPEND_RECHECK_SECONDS,
                (ns, cluster),
            )
        )
    keep = [
        a
        for a in listed
        if a.cluster_key not in suspended
        and a.cluster_key not in waiting
        and not (isinstance(a, ApplyApp) and (a.namespace, a.name) in apps)
    ]
    for key in sorted({a.cluster_key for a in listed if a.cluster_key in waiting}):
        out.append(
            Wait(
                f"the new version of its app waits for cluster {key[0]}/{waiting[key]} (suspended)", SUSPEND_RECHECK_SECONDS, key
            )
        )
    return out + keep
