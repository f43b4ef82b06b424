"""kstatus condition helpers: transitions, lastTransitionTime kept when the status is unchanged, ordering."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gitops_kd.status import conditions as c

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)


def test_reconciling_then_ready_then_stalled() -> None:
    conds = c.mark_reconciling([], "Upgrading", "going to 2.0.0", generation=3, now=T0)
    assert [x["type"] for x in conds] == ["Ready", "Reconciling"]
    assert c.get(conds, "Ready") == {
        "type": "Ready",
        "status": "False",
        "reason": "Upgrading",
        "message": "going to 2.0.0",
        "lastTransitionTime": "2026-01-02T03:04:05Z",
        "observedGeneration": 3,
    }
    ready = c.mark_ready(conds, "UpgradeSucceeded", "all at 2.0.0", generation=3, now=T1)
    assert [x["type"] for x in ready] == ["Ready"]
    assert c.is_true(ready, "Ready") and ready[0]["lastTransitionTime"] == "2026-01-02T03:09:05Z"
    stalled = c.mark_stalled(ready, "GateTimedOut", "gate never passed", generation=4, now=T1)
    assert c.is_true(stalled, "Stalled") and not c.is_true(stalled, "Ready")
    assert c.get(stalled, "Reconciling") is None


def test_transition_time_kept_while_status_unchanged() -> None:
    first = c.mark_reconciling([], "Upgrading", "pod 1 of 3", generation=1, now=T0)
    second = c.mark_reconciling(first, "Upgrading", "pod 2 of 3", generation=2, now=T1)
    ready = c.get(second, "Ready")
    assert ready is not None
    assert ready["lastTransitionTime"] == "2026-01-02T03:04:05Z"  # still False: time kept
    assert ready["message"] == "pod 2 of 3" and ready["observedGeneration"] == 2
    assert c.set_condition(second, c.Condition("Ready", "False", "Upgrading", "pod 2 of 3", 2), T1) == second


def test_other_conditions_are_kept_and_input_not_mutated() -> None:
    base = [{"type": "Custom", "status": "True", "reason": "X", "message": "", "lastTransitionTime": "t"}]
    out = c.mark_ready(base, "Ok", "fine", generation=None, now=T0)
    assert [x["type"] for x in out] == ["Ready", "Custom"]
    assert "observedGeneration" not in out[0]
    assert base == [{"type": "Custom", "status": "True", "reason": "X", "message": "", "lastTransitionTime": "t"}]


def test_bad_condition_is_rejected() -> None:
    with pytest.raises(ValueError, match="status must be one of"):
        c.Condition("Ready", "yes", "Reason")
    with pytest.raises(ValueError, match="reason must not be empty"):
        c.Condition("Ready", "True", "")
