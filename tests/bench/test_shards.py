"""bench/shards.py in CI's tiny configuration: N clusters on R = 1 and 2 sharded replicas, every figure measured."""

from __future__ import annotations

import pytest

from tests.bench.conftest import BenchRunner


@pytest.mark.timeout(600)
def test_shards_small(bench: BenchRunner) -> None:
    out = bench.run("shards.py", "--small", "--timeout", "240", timeout=600)
    assert "N = 4 clusters, 4 shards" in out
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")[1:]]
        for line in out.splitlines()
        if line.startswith("| ") and line.split("|")[1].strip().isdigit()
    }
    assert set(rows) == {"1", "2"}, out
    for r, cells in rows.items():
        assert len(cells) == 5 and all(cells), (r, cells)
        assert cells[3].endswith("x)"), cells  # the fleet upgrade's ratio to R=1, measured in this run
    assert rows["1"][4] == "-" and rows["2"][4].endswith(" s"), rows  # recovery after a kill: only with R > 1
