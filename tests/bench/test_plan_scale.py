"""bench/plan_scale.py in a tiny configuration: in sync plans nothing, one app changed touches only its clusters."""

from __future__ import annotations

from tests.bench.conftest import BenchRunner


def test_plan_scale_tiny(bench: BenchRunner) -> None:
    out = bench.run("plan_scale.py", "--apps", "6", "--clusters", "4", "--per-app", "2", "--repeat", "1")
    assert "in sync: actions 0, refusals 0" in out
    assert "clusters touched 2 of 4 (the app has 2)" in out
    assert bench.figure(out, "only the changed app's clusters touched") == "yes"
    assert "EnsureRollout 2" in out and "PatchTemplate 4" in out
    assert "ApplyApp" not in out  # the KDApp both clusters use is held (stock KubeDirector refuses editing it)
    assert out.index("-- counts") < out.index("-- times")


def test_plan_scale_refuses_an_impossible_fleet(bench: BenchRunner) -> None:
    proc = bench.call("plan_scale.py", "--apps", "1", "--clusters", "3", "--per-app", "2")
    assert proc.returncode == 2
    assert "3 clusters need at least 2 apps at 2 per app" in proc.stderr
