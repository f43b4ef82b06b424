"""A sample of the sharded fault matrix (tests/safety/shardmatrix.py): kill and freeze with 3 replicas of
`gitops-kd run --shards 6`, and the kinds of replicas coming and going (join, resume, count, mode; issue 41);
SHARD_FAULT_MATRIX_SAMPLE="kind@k,..." runs other points (the sweep: bench/README.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.safety.matrix import Fault
from tests.safety.shardmatrix import HELD, LEASE, run_sharded

# k over the victim's own writes and execs (about 60 from the upgrade commit on: it holds shard 0, so the record's
# writes count too): kill in the first upgrade's pod phase, freeze in the downgrade.
SAMPLE = [Fault("kill", 12), Fault("freeze", 30)]
if os.environ.get("SHARD_FAULT_MATRIX_SAMPLE"):
    SAMPLE = [Fault(s.split("@")[0], int(s.split("@")[1])) for s in os.environ["SHARD_FAULT_MATRIX_SAMPLE"].split(",")]


@pytest.mark.parametrize("fault", SAMPLE, ids=str)
def test_a_killed_or_frozen_replica_of_three_breaks_no_invariant(tmp_path: Path, fault: Fault) -> None:
    """Invariants (see shardmatrix.run_sharded) hold on every shard's cluster when the replica holding shard 0 is
    killed or frozen at its k-th write; the others hold its shards within about one lease duration."""
    run = run_sharded(tmp_path, fault)
    assert run.fault == fault and run.fired and run.acted
    if fault.kind in HELD:
        assert run.takeover < 3 * LEASE[0] + 5, run.takeover
    assert len(set(run.clusters.values())) == (2 if fault.kind == "join" else 3)  # one cluster per (first) replica
