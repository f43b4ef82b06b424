"""KDRollout status transitions (start, progress, finish, stall) and Event bodies."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gitops_kd.rollout.model import ApplyFailure
from gitops_kd.status import events, rollout

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_start_records_the_whole_attempt_in_one_patch_and_resets_progress() -> None:
    status = {"appVersion": "1.0.0", "pods": {"a-0": {"hookDone": True}}, "phase": "Idle"}
    patch = rollout.start(
        status,
        direction="upgrade",
        app="hello",
        target="2.0.0",
        from_version="1.0.0",
        commit="0123456789abcdef",
        attempt="a1",
        from_stanza='{"x": 1}',
        generation=2,
        now=T0,
    )
    assert patch["phase"] == "Upgrading" and patch["pods"] == {"a-0": None}
    assert patch["fromVersion"] == "1.0.0" and patch["appVersion"] == "1.0.0"
    assert (patch["targetVersion"], patch["direction"], patch["attempt"], patch["commit"], patch["fromStanza"]) == (
        "2.0.0",
        "upgrade",
        "a1",
        "0123456789abcdef",
        '{"x": 1}',
    )
    assert "0123456789ab" in patch["message"]
    assert {c["type"]: c["status"] for c in patch["conditions"]} == {"Ready": "False", "Reconciling": "True"}


def test_finish_appends_history_and_is_ready() -> None:
    status = {
        "phase": "Upgrading",
        "fromVersion": "1.0.0",
        "startedAt": "2026-01-01T00:00:00Z",
        "history": [{"version": str(i)} for i in range(12)],
    }
    patch = rollout.finish(status, version="2.0.0", commit="abc", generation=2, now=T0)
    assert patch["phase"] == "Idle" and patch["appVersion"] == "2.0.0"
    assert len(patch["history"]) == rollout.HISTORY_LIMIT
    assert patch["history"][-1] == {
        "version": "2.0.0",
        "fromVersion": "1.0.0",
        "commit": "abc",
        "startedAt": "2026-01-01T00:00:00Z",
        "finishedAt": "2026-01-02T03:04:05Z",
        "result": "Succeeded",
    }
    assert rollout.is_finished({**status, **patch}, "2.0.0", 2)
    again = rollout.finish({**status, **patch}, version="2.0.0", commit="abc", generation=2, now=T0)
    assert len(again["history"]) == rollout.HISTORY_LIMIT and again["history"] == patch["history"]


def test_stall_and_adopt() -> None:
    patch = rollout.stall({}, reason="GateTimedOut", message="no", generation=1, now=T0)
    assert rollout.is_stalled(patch, "GateTimedOut", "no")
    adopt = rollout.adopt({}, app="hello", version="1.0.0", commit="abc", generation=1, now=T0)
    assert rollout.is_finished(adopt, "1.0.0", 1)


def test_event_body() -> None:
    ref = events.involved(
        {
            "apiVersion": "kubedirector.hpe.com/v1beta1",
            "kind": "KubeDirectorCluster",
            "metadata": {"name": "hello-dev", "namespace": "ns", "uid": "u1"},
        }
    )
    body = events.event_body(ref, events.POD_REPLACED, "x" * 2000, now=T0)
    assert body["involvedObject"]["uid"] == "u1" and body["metadata"]["namespace"] == "ns"
    assert body["metadata"]["name"].startswith("hello-dev.") and len(body["message"]) == events.MESSAGE_LIMIT
    assert body["firstTimestamp"] == "2026-01-02T03:04:05Z" and body["type"] == "Normal"
    with pytest.raises(ValueError, match="Normal or Warning"):
        events.event_body(ref, "R", "m", type_="Error", now=T0)


def test_apply_stall_is_lifted_back_to_the_phase_before_it_with_reconciling() -> None:
    record = {"kind": "KubeDirectorCluster", "namespace": "default", "name": "c", "digest": "d1", "failures": 5}
    stalled = {
        **rollout.stall({"phase": "Upgrading"}, reason="ApplyFailed", message="no", generation=1, now=T0),
        "applyFailure": {**record, "phase": "Upgrading"},
    }
    assert rollout.apply_stalled(stalled)
    lifted = rollout.lift_apply_stall(stalled, "went through", generation=1, now=T0)
    assert (lifted["phase"], lifted["stalledReason"], lifted["applyFailure"]) == ("Upgrading", None, None)
    assert {c["type"]: c["status"] for c in lifted["conditions"]} == {"Ready": "False", "Reconciling": "True"}
    assert rollout.lift_apply_stall({"phase": "Idle", "applyFailure": record}, "x", generation=1, now=T0) == {
        "applyFailure": None
    }


def test_a_changed_write_counts_from_one_and_lifts_the_stall_of_the_old_one() -> None:
    old = {"kind": "KubeDirectorCluster", "namespace": "default", "name": "c", "digest": "d1", "failures": 5, "phase": "Idle"}
    stalled = {**rollout.stall({"phase": "Idle"}, reason="ApplyRefused", message="no", generation=1, now=T0), "applyFailure": old}
    new = {**old, "digest": "d2", "failures": 1}
    assert not rollout.same_write(ApplyFailure.from_obj(old), "KubeDirectorCluster", "default", "c", "d2")
    patch = rollout.count_apply_failure(stalled, new, generation=2, now=T0)
    assert patch["phase"] == "Idle" and patch["stalledReason"] is None
    assert patch["applyFailure"] == {**new, "phase": "Idle"}
    counting = rollout.count_apply_failure({"phase": "Upgrading"}, new, generation=2, now=T0)
    assert counting == {"applyFailure": {**new, "phase": "Upgrading"}}
