"""The recorded answers of the real API server (tests/real/fixtures, one file per version) are still what it answers."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.real.controlplane import ControlPlane
from tests.real.differential import FIXTURE, fixture_for, record


@pytest.mark.real
def test_the_fixture_matches_the_real_server_case_by_case(real_cp: ControlPlane) -> None:
    fixture = fixture_for(real_cp.version)
    assert fixture.exists(), f"no answers recorded for {real_cp.version}: python -m tests.real.differential --write"
    expected = json.loads(fixture.read_text())["records"]
    got = record(real_cp, f"diff-{uuid.uuid4().hex[:6]}")
    assert [r["case"] for r in got] == [r["case"] for r in expected]
    for mine, theirs in zip(got, expected):
        assert (mine["status"], mine["body"]) == (theirs["status"], theirs["body"]), mine["case"]


def test_the_fixture_holds_the_answers_the_emulator_must_learn() -> None:
    """Runs on every backend: reads the fixture only."""
    by_case = {r["case"]: r for r in json.loads(FIXTURE.read_text())["records"]}
    gone = by_case["watch from a compacted resourceVersion: ERROR event 410 Expired"]["body"]
    assert gone["type"] == "ERROR" and gone["object"]["reason"] == "Expired"
    assert by_case["put with a stale resourceVersion: 409 Conflict"]["body"]["reason"] == "Conflict"
    status = by_case["status patch: generation stays"]["body"]
    assert status["metadata"]["generation"] == 2 and status["status"]["observedGeneration"] == 2
    pods = by_case["its pods: names, labels, owner, hostname"]["body"]["items"]
    assert [(p["metadata"]["name"], p["spec"]["hostname"], p["spec"]["subdomain"]) for p in pods] == [
        ("db-0", "db-0", "db"),
        ("db-1", "db-1", "db"),
    ]
