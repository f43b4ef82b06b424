"""A gate that keeps answering the same thing is quiet: the KDRollout's status is written when what a reader sees
changes (the first failed check), not at every check, and the log says what is waited for once."""

from __future__ import annotations

import logging

import pytest

from gitops_kd.constants import ROLLOUT_API_VERSION, ROLLOUT_PLURAL
from tests.e2e.harness import E2E, WriteLog, hello_app, wait_for
from tests.e2e.test_upgrade_steps import gated_stanza, start_with_exec

CHECKS = 10  # failed gate checks watched (periodSeconds 1: about ten seconds of waiting)
MOST_WRITES = 3  # KDRollout writes allowed while they run


def test_a_waiting_gate_writes_status_only_when_its_answer_changes(e2e: E2E, caplog: pytest.LogCaptureFixture) -> None:
    """Invariant: while a gate waits with the same answer, at most a few KDRollout writes (here 10 checks, each
    before this change two writes: the check's record and the wave note's clearing), the step says what is waited
    for, and the gate's wait is logged once at INFO, never as `no longer waiting`."""
    caplog.set_level(logging.INFO, logger="gitops_kd")
    roles = start_with_exec(e2e)
    ctl = roles["controller"][0]
    e2e.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=gated_stanza("true"))}, "hello 2.0.0 gated")

    checks = lambda: [line for line in e2e.log if line.startswith("check upgrade gate")]  # noqa: E731
    wait_for("the controller pod's gate checked once", lambda: len(checks()) >= 1, 90)
    assert ((e2e.rollout() or {}).get("status") or {}).get("currentPod") == ctl
    writes = WriteLog(e2e.rest, ROLLOUT_API_VERSION, ROLLOUT_PLURAL, e2e.ns)
    e2e.log.clear()
    caplog.clear()
    wait_for(f"{CHECKS} more gate checks", lambda: len(checks()) >= CHECKS, 60)
    writes.stop()
    mine = [rv for rv, obj in writes.writes if obj["metadata"]["name"] == "hello-dev"]
    assert len(mine) <= MOST_WRITES, f"{len(mine)} KDRollout writes during {len(checks())} gate checks: {e2e.log}"
    assert not [line for line in e2e.log if "no longer waiting" in line], e2e.log
    step = str(((e2e.rollout() or {}).get("status") or {}).get("step"))
    assert step.startswith(f"gate in {ctl} not passed yet"), step
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO and "not passed yet" in r.getMessage()]
    assert len(said) <= 1, said
    assert not [r.getMessage() for r in caplog.records if "no longer waiting" in r.getMessage()]
