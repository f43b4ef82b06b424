"""bench/reconcile_requests.py on a tiny fleet: no request in sync, writes only for the changed app's clusters."""

from __future__ import annotations

from tests.bench.conftest import BenchRunner


def test_reconcile_requests_tiny(bench: BenchRunner) -> None:
    out = bench.run("reconcile_requests.py", "--apps", "5", "--clusters", "3", "--per-app", "2", "--timeout", "60", timeout=180)
    assert "in-sync reconcile requests: 0, writes 0, lists 0, gets 0" in out
    assert "start-up requests: 14 " in out  # one LIST and one WATCH per watched kind, the 2 KubeDirector CRDs (flavour)
    assert "clusters of app-0000: 2 of 3; clusters written: 2; writes for anything else: 0" in out
    assert "kubedirectorapps" not in out.split("writes by request:")[1].splitlines()[0]  # the in-use KDApp is held
    assert "c-0002" not in out.split("writes by owner:")[1].splitlines()[0]  # the other app's cluster untouched
    assert "lists 0" in out.split("one-app commit requests:")[1].splitlines()[0]
    assert out.index("-- counts") < out.index("-- times")
