"""`gitops-kd run` as a process at the default log level: its metrics and logs tell the truth (issue 15, Build 5)."""

from __future__ import annotations

import re

from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E, pod_ready, wait_for


def _count(text: str, result: str) -> float:
    m = re.search(rf'^gitops_kd_reconcile_total\{{result="{result}"\}} (\S+)$', text, re.M)
    return float(m.group(1)) if m else 0.0


def test_an_idle_controller_counts_requeues_not_errors_logs_no_poll_noise_and_stops_at_info(e2e: E2E) -> None:
    """Invariants, through the real process: an in-sync controller's periodic requeues are counted as
    result="requeue", never "error"; at the default level (info) the scheduler's per-poll INFO lines are not logged;
    a graceful stop of the Lease holder is an INFO line, not an ERROR about a lost Lease, and exits 0."""
    run = RunProcess("controller", e2e.tmp, e2e.cluster.kubeconfig, str(e2e.repo), "--leader-elect")
    try:
        e2e.wait_ready_at("1.0.0")
        wait_for("every member Ready", lambda: len(e2e.pods()) == 3 and all(pod_ready(p) for p in e2e.pods()), 60)

        def metrics() -> str:
            status, text = run.get("/metrics")
            assert status == 200, text
            return text

        polls = re.compile(r'^gitops_kd_git_poll_total\{result="\w+"\} (\S+)$', re.M)
        start = sum(float(n) for n in polls.findall(metrics()))

        def idle_a_while() -> str | None:
            text = metrics()
            return text if sum(float(n) for n in polls.findall(text)) >= start + 10 and _count(text, "requeue") >= 3 else None

        text = wait_for("ten more Git polls and some requeues", idle_a_while, 90, 0.5)
        assert _count(text, "error") == 0, text
        assert _count(text, "success") >= 1, text
    finally:
        code = run.stop()
    log = run.log()
    assert code == 0, log[-3000:]
    # apscheduler's two INFO lines per poll; its WARNING that a poll was skipped (the previous one still running,
    # here with polls every 0.5s on a loaded machine) says something and stays
    assert not re.search(r" (DEBUG|INFO) apscheduler", log) and "Running job" not in log, log[-3000:]
    assert " INFO " in log and " ERROR " not in log and "lost the Lease" not in log, log[-3000:]
    assert re.search(r" INFO gitops_kd\.controller\.replica: replica \S+ stopped leading \(graceful stop\)", log), log[-3000:]
