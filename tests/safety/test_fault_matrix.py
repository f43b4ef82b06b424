"""A sample of the upgrade fault matrix (tests/safety/matrix.py); scripts/fault-matrix runs it whole."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.safety.matrix import RECORD_DELETE, RECORD_EDIT, RECORD_WRITE, Fault, run_sequence

# k spread over the sequence (N is about 136 writes and execs, Events included; `scripts/fault-matrix --requests`
# lists them): the rollout start, the pod phase of the first upgrade, the downgrade and the second upgrade; lost@17:
# the first upgrade's first migration exec (it runs, its answer is lost). FAULT_MATRIX_SAMPLE="kind@k,..." overrides it.
SAMPLE = [
    Fault("error", 3),
    Fault("conflict", 30),
    Fault("timeout", 70),
    Fault("lost", 17),
    Fault("kill", 110),
    Fault("freeze", 50),
    # the record kinds: its writes failing as the first upgrade is accepted, an edit mid-upgrade, a delete
    # during the downgrade (the run then checks the record holds the head, Ready)
    Fault(RECORD_WRITE, 2),
    Fault(RECORD_EDIT, 30),
    Fault(RECORD_DELETE, 70),
]
if os.environ.get("FAULT_MATRIX_SAMPLE"):
    SAMPLE = [Fault(s.split("@")[0], int(s.split("@")[1])) for s in os.environ["FAULT_MATRIX_SAMPLE"].split(",")]


def test_fault_free_sequence_holds_every_invariant(tmp_path: Path) -> None:
    """Invariants of the sequence with no fault; it also counts the controller's writes and execs (N)."""
    run = run_sequence(tmp_path, Fault("none", 0))
    assert run.writes > 20 and len(run.requests) == run.writes
    assert run.ready_checks >= 4  # Ready at 1.0.0, 2.0.0, 1.0.0, 2.0.0 at least, each checked against the pods


@pytest.mark.parametrize("fault", SAMPLE, ids=str)
def test_one_fault_in_the_sequence_breaks_no_invariant(tmp_path: Path, fault: Fault) -> None:
    """Invariants (see matrix.run_sequence) hold with one fault at the k-th write or exec of the controller."""
    run = run_sequence(tmp_path, fault)
    assert run.fault == fault and run.fired
