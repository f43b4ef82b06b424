"""bench/writes_per_revision.py in a tiny configuration: it runs, the first deploy gets Ready, and the KDApp is
never updated after its creation while Git is unchanged (no write loop against KubeDirector's mutations)."""

from __future__ import annotations

from tests.bench.conftest import BenchRunner


def test_writes_per_revision_tiny(bench: BenchRunner) -> None:
    out = bench.run("writes_per_revision.py", "--idle", "2")
    assert bench.figure(out, "ready") == "after"
    assert bench.figure(out, "kubedirectorapps updates+patches") == "0"
