"""Tracker de-duplication, the alert fan-out (metrics, events, log, payload) and DriftGuard over reconciles."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

import pytest
from plan.kdworld import T0, load_text

from gitops_kd.drift import (
    ALERT_ONLY,
    DRIFT_DETECTED,
    DRIFT_RESOLVED,
    DRIFT_REVERTED,
    POLICY_ANNOTATION,
    Drift,
    DriftAlerter,
    DriftGuard,
    DriftPolicy,
    DriftTracker,
    FieldChange,
)
from gitops_kd.plan import PatchTemplate
from gitops_kd.server.metrics import ControllerMetrics

from .worlds import HELLO1, HELLO_DEV, NS, app_container, desired, edit_template, steady


class Events:
    """Records what the alerter asks the EventRecorder to write."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str, str, str]] = []

    def record(self, obj: Any, reason: str, message: str, *, type_: str = "Normal") -> None:
        self.items.append((obj["metadata"]["name"], reason, type_, message))


def sts_drift(image: str, *, extra: tuple[FieldChange, ...] = ()) -> Drift:
    return Drift(
        "StatefulSet",
        NS,
        "kdss-worker",
        "hello-dev",
        (FieldChange("spec.template.spec.containers[app].image", "hello:1", image),) + extra,
        "c0ffee",
    )


def metric(m: ControllerMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, {"kind": "StatefulSet", "namespace": NS, "name": "kdss-worker", **labels})


def test_tracker_one_alert_per_occurrence() -> None:
    t = DriftTracker()
    first = t.update([sts_drift("evil:1")], T0)
    assert len(first.new) == 1 and not first.ongoing
    again = t.update([sts_drift("evil:1")], T0 + timedelta(seconds=5))
    assert not again.new and len(again.ongoing) == 1 and again.ongoing[0].detected_at == T0
    other = t.update([sts_drift("evil:2")], T0 + timedelta(seconds=6))  # a further edit: a new occurrence
    assert len(other.new) == 1
    shrink = FieldChange("spec.updateStrategy.type", "OnDelete", "RollingUpdate")
    t.update([sts_drift("evil:2", extra=(shrink,))], T0)
    assert not t.update([sts_drift("evil:2")], T0).new  # a partial revert is progress, not news
    gone = t.update([], T0 + timedelta(seconds=9))
    assert len(gone.resolved) == 1 and not t.open
    assert t.update([sts_drift("evil:2")], T0).new  # drifting again after resolution alerts again


def test_tracker_scope_keeps_unlooked_objects_open() -> None:
    t = DriftTracker()
    t.update([sts_drift("evil:1")], T0)
    assert not t.update([], T0, scope=[]).resolved
    assert t.update([], T0, scope=[("StatefulSet", NS, "kdss-worker")]).resolved


def test_alerter_fans_out_once(caplog: pytest.LogCaptureFixture) -> None:
    metrics, events = ControllerMetrics(), Events()
    alerter = DriftAlerter(events=events, metrics=metrics, now=lambda: T0)
    caplog.set_level(logging.INFO, logger="gitops_kd.drift.alert")
    for _ in range(3):
        alerter.process([sts_drift("evil:1")], DriftPolicy())
    assert metric(metrics, "gitops_kd_drift_detected_total") == 1
    assert metric(metrics, "gitops_kd_drift_active") == 1
    [(name, reason, type_, message)] = events.items
    assert (name, reason, type_) == ("kdss-worker", DRIFT_DETECTED, "Warning")
    assert "spec.template.spec.containers[app].image: hello:1 -> evil:1" in message and "c0ffee" in message
    [record] = [r for r in caplog.records if r.getMessage().startswith("drift detected")]
    assert record.levelno == logging.WARNING
    assert record.drift == {  # type: ignore[attr-defined]
        "object": {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "namespace": NS,
            "name": "kdss-worker",
            "cluster": "hello-dev",
        },
        "fields": [{"path": "spec.template.spec.containers[app].image", "expected": "hello:1", "actual": "evil:1"}],
        "commit": "c0ffee",
        "action": "reverted",
        "detectedAt": "2026-01-01T12:00:00Z",
        "state": "detected",
    }
    assert json.loads(record.getMessage().split(": ", 1)[1]) == record.drift  # type: ignore[attr-defined]
    alerter.process([], DriftPolicy())
    assert metric(metrics, "gitops_kd_drift_active") == 0
    assert events.items[-1][1:3] == (DRIFT_REVERTED, "Normal")
    alerter.process([sts_drift("evil:1")], DriftPolicy(default=ALERT_ONLY))
    alerter.process([], DriftPolicy(default=ALERT_ONLY))
    assert "not reverted (drift policy alert-only)" in events.items[-2][3]
    assert events.items[-1][1] == DRIFT_RESOLVED
    assert metric(metrics, "gitops_kd_drift_detected_total") == 2


def test_guard_baseline_then_drift_then_revert() -> None:
    metrics, events = ControllerMetrics(), Events()
    guard = DriftGuard(DriftAlerter(events=events, metrics=metrics, now=lambda: T0))
    d = desired(HELLO1, HELLO_DEV, commit="c1")
    drifted = edit_template(steady(), "worker", lambda t: app_container(t).update(image="evil:9"))
    # Never seen in sync at c1: the difference is convergence (reverted, not alerted).
    p = guard.plan(d, drifted, now=T0)
    assert any(isinstance(a, PatchTemplate) for a in p.actions) and events.items == []
    assert guard.synced_commit((NS, "hello-dev")) is None
    guard.plan(d, steady(), now=T0)
    assert guard.synced_commit((NS, "hello-dev")) == "c1"
    assert guard.synced_commit((NS, "hello"), app=True) == "c1"
    p = guard.plan(d, drifted, now=T0)
    assert any(isinstance(a, PatchTemplate) for a in p.actions)
    assert [e[1] for e in events.items] == [DRIFT_DETECTED]
    guard.plan(d, drifted, now=T0)
    assert len(events.items) == 1
    guard.plan(d, steady(), now=T0)
    assert [e[1] for e in events.items] == [DRIFT_DETECTED, DRIFT_REVERTED]
    # A new commit resets the baseline: its differences are Git's, not drift.
    guard.plan(desired(HELLO1, HELLO_DEV, commit="c2"), drifted, now=T0)
    assert len(events.items) == 2


def test_guard_alert_only_keeps_gauge_and_drops_revert() -> None:
    body = HELLO_DEV.body
    body["metadata"]["annotations"] = {POLICY_ANNOTATION: ALERT_ONLY}
    cl = load_text(HELLO_DEV.source, body)
    metrics, events = ControllerMetrics(), Events()
    guard = DriftGuard(DriftAlerter(events=events, metrics=metrics, now=lambda: T0))
    d = desired(HELLO1, cl, commit="c1")
    guard.plan(d, steady(HELLO1, cl), now=T0)
    drifted = edit_template(steady(HELLO1, cl), "worker", lambda t: app_container(t).update(image="evil:9"))
    for _ in range(3):
        assert guard.plan(d, drifted, now=T0).actions == ()
    assert metric(metrics, "gitops_kd_drift_active") == 1
    assert metric(metrics, "gitops_kd_drift_detected_total") == 1


def _recording(state: Any, digest: str | None) -> Any:
    """``state`` with hello-dev's KDRollout recording ``digest`` as its in-sync baseline."""
    from plan.kdworld import set_cluster, with_rollout

    c = state.clusters[(NS, "hello-dev")]
    return set_cluster(state, with_rollout(c, raw={"status": {"syncedDigest": digest}} if digest else {}))


def test_guard_records_in_sync_and_a_restarted_guard_keeps_the_baseline() -> None:
    from plan.kdworld import HELLO2

    from gitops_kd.drift import baseline
    from gitops_kd.plan import RecordInSync

    key = (NS, "hello-dev")
    d = desired(HELLO1, HELLO_DEV, commit="c1")
    first = DriftGuard(DriftAlerter(events=Events(), metrics=ControllerMetrics(), now=lambda: T0))
    [record] = [a for a in first.plan(d, steady(), now=T0).actions]
    assert isinstance(record, RecordInSync) and record.commit == "c1"
    assert record.digest == baseline.digest(d, steady(), key)
    assert first.plan(d, _recording(steady(), record.digest), now=T0).actions == ()  # recorded: nothing to write
    # an unrelated commit keeps the digest; a change of what Git asks of the cluster does not
    assert baseline.digest(desired(HELLO1, HELLO_DEV, commit="c9"), steady(), key) == record.digest
    assert baseline.digest(desired(HELLO2, HELLO_DEV, commit="c9"), steady(), key) != record.digest

    drifted = edit_template(_recording(steady(), record.digest), "worker", lambda t: app_container(t).update(image="evil:9"))
    events = Events()
    restarted = DriftGuard(DriftAlerter(events=events, metrics=ControllerMetrics(), now=lambda: T0))
    p = restarted.plan(desired(HELLO1, HELLO_DEV, commit="c2"), drifted, now=T0)
    assert any(isinstance(a, PatchTemplate) for a in p.actions)
    assert [e[1] for e in events.items] == [DRIFT_DETECTED] and "evil:9" in events.items[0][3]
    # without a matching record the same difference is convergence after a restart
    events = Events()
    fresh = DriftGuard(DriftAlerter(events=events, metrics=ControllerMetrics(), now=lambda: T0))
    stale = edit_template(_recording(steady(), "0" * 32), "worker", lambda t: app_container(t).update(image="evil:9"))
    fresh.plan(d, stale, now=T0)
    assert events.items == []
