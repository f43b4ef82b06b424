"""classify: the pure drift stage: (plan, observed, baselines) -> (filtered plan, DriftReport with new baselines).

Baseline: a Git change is not drift. A cluster (app) counts as converging — no drift — until it was seen with
nothing planned at the desired commit; from then on every owned difference is an out-of-band change. A cluster in
sync is recorded on its KDRollout (RecordInSync with a drift.baseline digest), so after a restart a cluster whose
recorded digest matches what Git asks has its baseline back at once. The baselines (which commit each cluster
and app was seen in sync at, and the open drift occurrences) are plain data passed in and returned: the caller
keeps them between calls. No I/O, no clock (``now`` is passed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from gitops_kd.diff.engine import users_of
from gitops_kd.drift import baseline
from gitops_kd.drift.detect import detect, upgrade_in_progress
from gitops_kd.drift.model import Drift, ObjectKey
from gitops_kd.drift.policy import REVERT, DriftPolicy, filter_plan
from gitops_kd.drift.rules import IgnoreRules
from gitops_kd.drift.tracker import DriftTracker, Occurrence, Transitions
from gitops_kd.kd.layout import KDAPP_KIND
from gitops_kd.observed import ObservedState
from gitops_kd.plan.actions import ApplyApp, Plan, RecordInSync, waits_last
from gitops_kd.spec.state import DesiredState, Key

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Baselines:
    """What drift remembers between plans: the commit each cluster / app was seen in sync at, open occurrences."""

    clusters: Mapping[Key, str] = field(default_factory=dict)
    apps: Mapping[Key, str] = field(default_factory=dict)
    open: Mapping[ObjectKey, Occurrence] = field(default_factory=dict)


@dataclass(frozen=True)
class DriftReport:
    """One classification: the drifts seen, their transitions (new / still open / resolved), the policy that
    decides revert or alert-only, and the baselines to keep for the next call."""

    drifts: tuple[Drift, ...]
    transitions: Transitions
    policy: DriftPolicy
    baselines: Baselines
    scope: tuple[ObjectKey, ...] = ()  # the open occurrences this classification looked at

    @property
    def new(self) -> tuple[Occurrence, ...]:
        return self.transitions.new

    @property
    def ongoing(self) -> tuple[Occurrence, ...]:
        return self.transitions.ongoing

    @property
    def resolved(self) -> tuple[Occurrence, ...]:
        return self.transitions.resolved


def classify(
    plan: Plan,
    observed: ObservedState,
    baselines: Baselines,
    *,
    desired: DesiredState,
    now: datetime,
    rules: IgnoreRules | None = None,
    default_policy: str = REVERT,
    partial: bool = False,
) -> tuple[Plan, DriftReport]:
    """The plan with alert-only objects' reverting actions removed (and RecordInSync for clusters newly in sync),
    and the report. ``partial``: ``desired`` is one work key's part; occurrences outside it stay as they are.
    A refused plan is returned as it is (nothing classified)."""
    policy = DriftPolicy.from_desired(desired, default_policy)
    if plan.refused:
        return plan, DriftReport((), Transitions(), policy, baselines)
    clusters, apps = _updated(desired, observed, plan, dict(baselines.clusters), dict(baselines.apps))

    def busy(key: Key) -> bool:
        return clusters.get(key) != desired.commit

    def app_busy(key: Key) -> bool:
        return apps.get(key) != desired.commit

    drifts = detect(
        desired,
        observed,
        rules=rules,
        in_progress=busy,
        app_in_progress=app_busy,
        new_round=not partial,
    )
    tracker = DriftTracker(dict(baselines.open))
    scope = _scope(tracker, desired, observed, busy, app_busy, partial)
    transitions = tracker.update(drifts, now, scope=scope)
    guarded = filter_plan(plan, drifts, policy)
    out = _with_records(guarded, _records(desired, observed, plan, clusters))
    report = DriftReport(tuple(drifts), transitions, policy, Baselines(clusters, apps, tracker.open), tuple(scope))
    return out, report


def _updated(
    desired: DesiredState, observed: ObservedState, base: Plan, clusters: dict[Key, str], apps: dict[Key, str]
) -> tuple[dict[Key, str], dict[Key, str]]:
    restored: set[Key] = set()
    for key in desired.clusters:
        if key not in observed.clusters or upgrade_in_progress(desired, observed, key):
            continue
        if clusters.get(key) == desired.commit:
            continue
        if not base.for_cluster(*key):
            log.info("drift baseline: cluster %s/%s in sync at commit %s", *key, desired.commit[:12])
            clusters[key] = desired.commit
        elif (got := baseline.recorded(observed, key)) is not None and got == baseline.digest(desired, observed, key):
            log.info("drift baseline: cluster %s/%s restored from its KDRollout (in sync at this spec)", *key)
            clusters[key] = desired.commit
            restored.add(key)
    pending_apps = {(a.namespace, a.name) for a in base.actions if isinstance(a, ApplyApp)}
    for key in desired.apps:
        users = [c.key for c in users_of(desired, observed, key) if c.key in desired.clusters]
        if key not in observed.apps or not all(clusters.get(c) == desired.commit for c in users):
            continue
        # a pending ApplyApp is convergence, unless a user's recorded digest (which covers the app
        # manifest) shows Git has not changed the app since it was last in sync
        if key not in pending_apps or (users and all(c in restored for c in users)):
            apps[key] = desired.commit
    return clusters, apps


def _records(desired: DesiredState, observed: ObservedState, base: Plan, clusters: Mapping[Key, str]) -> list[RecordInSync]:
    """RecordInSync for each cluster in sync now (no action planned) whose KDRollout records another digest."""
    out: list[RecordInSync] = []
    for key in sorted(k for k, c in clusters.items() if c == desired.commit):
        live = observed.clusters.get(key)
        if live is None or live.rollout is None or base.for_cluster(*key):
            continue
        want = baseline.digest(desired, observed, key)
        if want is not None and want != baseline.recorded(observed, key):
            out.append(RecordInSync(key[0], key[1], want, desired.commit))
    return out


def _scope(
    tracker: DriftTracker,
    desired: DesiredState,
    observed: ObservedState,
    busy: Callable[[Key], bool],
    app_busy: Callable[[Key], bool],
    partial: bool,
) -> list[ObjectKey]:
    """Open occurrences detection looked at this time (others stay open). A partial desired state looked
    only at its own apps and clusters."""
    out: list[ObjectKey] = []
    for key, occ in list(tracker.open.items()):
        d = occ.drift
        if d.kind == KDAPP_KIND:
            app = (d.namespace, d.name)
            looked = app in desired.apps and not app_busy(app) if partial else app not in desired.apps or not app_busy(app)
        elif partial:
            ck = d.cluster_key
            looked = (
                ck is not None
                and ck in desired.clusters
                and ck in observed.clusters
                and not busy(ck)
                and not upgrade_in_progress(desired, observed, ck)
            )
        else:
            ck = d.cluster_key
            looked = (
                ck is None
                or ck not in desired.clusters
                or ck not in observed.clusters
                or (not busy(ck) and not upgrade_in_progress(desired, observed, ck))
            )
        if looked:
            out.append(key)
    return out


def _with_records(p: Plan, records: list[RecordInSync]) -> Plan:
    """``p`` with ``records`` after its work and before its Waits."""
    if not records:
        return p
    return Plan(waits_last([*p.actions, *records]), p.refusals, p.kept)
