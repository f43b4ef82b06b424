"""History entries from KDRollout objects: finished attempts, the attempt under way, closing entries."""

from __future__ import annotations

from gitops_kd.history import REVERTED, STALLED, SUCCEEDED, SUPERSEDED, closing_entry, entries_of


def rollout(status: dict, spec: dict | None = None) -> dict:
    return {
        "metadata": {"namespace": "default", "name": "hello-dev"},
        "spec": spec or {"app": "hello", "targetVersion": "2.0.0", "commit": "c2"},
        "status": status,
    }


DONE = {
    "version": "1.0.0",
    "fromVersion": None,
    "commit": "c1",
    "startedAt": "2026-01-01T00:00:00Z",
    "finishedAt": "2026-01-01T00:01:00Z",
    "result": "Succeeded",
}


def test_finished_attempts_come_from_status_history() -> None:
    entries = entries_of(rollout({"phase": "Idle", "appVersion": "1.0.0", "history": [DONE]}))
    assert [(e.version, e.commit, e.result) for e in entries] == [("1.0.0", "c1", SUCCEEDED)]
    assert entries[0].as_dict()["finishedAt"] == "2026-01-01T00:01:00Z"


def test_attempt_under_way_and_stalled_attempt_are_listed() -> None:
    running = {
        "phase": "Upgrading",
        "direction": "upgrade",
        "fromVersion": "1.0.0",
        "startedAt": "2026-01-02T00:00:00Z",
        "history": [DONE],
    }
    assert [e.result for e in entries_of(rollout(running))] == [SUCCEEDED, "InProgress"]
    stalled = {
        **running,
        "phase": "Stalled",
        "stalledReason": "PodNotReady",
        "conditions": [{"type": "Stalled", "status": "True", "lastTransitionTime": "2026-01-02T00:05:00Z"}],
    }
    last = entries_of(rollout(stalled))[-1]
    assert (last.version, last.from_version, last.commit, last.result, last.reason, last.finished) == (
        "2.0.0",
        "1.0.0",
        "c2",
        STALLED,
        "PodNotReady",
        "2026-01-02T00:05:00Z",
    )


def test_closing_entry_says_reverted_when_gitops_kd_pushed_the_revert() -> None:
    stalled = {
        "phase": "Stalled",
        "direction": "upgrade",
        "fromVersion": "1.0.0",
        "startedAt": "t0",
        "failure": {"commit": "c2", "policy": "revert-commit", "revertCommit": "r1"},
    }
    spec = {"app": "hello", "targetVersion": "2.0.0", "commit": "c2"}
    entry = closing_entry(stalled, spec, now="t9")
    assert entry is not None and entry["result"] == REVERTED and entry["revertCommit"] == "r1"
    assert entry["finishedAt"] == "t9"
    moving = {"phase": "Upgrading", "direction": "upgrade", "fromVersion": "1.0.0", "startedAt": "t0"}
    assert closing_entry(moving, spec, now="t9")["result"] == SUPERSEDED
    assert closing_entry({"phase": "Idle", "direction": "upgrade"}, spec, now="t9") is None
    assert closing_entry({"phase": "Idle", "direction": "adopt"}, spec, now="t9") is None
