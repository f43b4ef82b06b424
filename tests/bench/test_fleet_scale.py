"""bench/fleet_scale.py in CI's tiny configuration: every figure of the table measured, side by side, for two N."""

from __future__ import annotations

import pytest

from tests.bench.conftest import BenchRunner


@pytest.mark.timeout(900)  # the script's own limit below: pytest's default 300 s cut it short on a loaded machine
def test_fleet_scale_small(bench: BenchRunner) -> None:
    out = bench.run("fleet_scale.py", "--small", timeout=900)
    table = out.split("fleet_scale:")[1]
    assert "| clusters in the fleet | 2 | 4 |" in table
    for label in (
        "in-sync reconcile of the fleet, kick to plan returned",
        "in-sync reconcile of one cluster (its key)",
        "one-cluster upgrade, poll to done",
        "one-app commit (5 clusters), poll to done",
        "fleet upgrade, N clusters in one wave",
        "controller CPU, steady state",
        "controller RSS",
        "RSS per cluster beyond the base",
    ):
        row = next(line for line in table.splitlines() if line.startswith(f"| {label} |"))
        cells = [c.strip() for c in row.strip("|").split("|")[1:]]
        assert len(cells) == 2 and all(cells), row
        if label != "RSS per cluster beyond the base":
            assert "-" not in cells, row  # measured at both sizes (the fleet upgrade too: N <= --upgrade-max)
    assert "N=4: in-sync reconcile of one cluster " in out and " of N=2 " in out  # the ratios against the reference size
    assert "fleet upgrade / one-cluster upgrade" in out
