"""Each pod's stage in a rollout, recorded once by the planner in the KDRollout (status.pods[pod].stage) and read
by `gitops-kd status`, the web UI and /metrics (gitops_kd_rollout_pods{stage}): the same answer through every
public surface."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.rollout.model import Stage
from gitops_kd.server.metrics import ControllerMetrics
from gitops_kd.server.ui import UiSettings
from tests.e2e.harness import E2E, exec_unavailable, hello_app, wait_for
from tests.e2e.test_upgrade_steps import gated_stanza

CLI = [str(Path(sys.executable).parent / "gitops-kd")]


def _recorded(e2e: E2E) -> dict[str, Any]:
    return {name: entry.get("stage") for name, entry in (((e2e.rollout() or {}).get("status") or {}).get("pods") or {}).items()}


def _cli(e2e: E2E, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "status", "hello-dev", "-n", e2e.ns, "--kubeconfig", str(e2e.backend.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _cli_stages(e2e: E2E) -> dict[str, Any]:
    shown = _cli(e2e, "-o", "json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    return {o["name"]: o["stage"] for o in json.loads(shown.stdout)["objects"] if o["kind"] == "Pod"}


def _ui_cells(url: str, ns: str) -> dict[str, tuple[str, str | None]]:
    with urllib.request.urlopen(f"{url}/ui/api/clusters/{ns}/hello-dev", timeout=10) as reply:
        data = json.loads(reply.read())["data"]
    return {p["name"]: (p["state"], p["recordedStage"]) for r in data["roles"] for p in r["pods"]}


def _stage_series(url: str) -> dict[str, float]:
    """gitops_kd_rollout_pods by stage, as GET /metrics serves it."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    found = re.findall(r'^gitops_kd_rollout_pods\{stage="([^"]+)"\} (\S+)$', text, re.M)
    return {stage: float(value) for stage, value in found}


def _counts(recorded: dict[str, Any]) -> dict[str, float]:
    """The series /metrics should serve for ``recorded`` (pod -> stage): every Stage, 0 when no pod is at it."""
    return {str(s): float(list(recorded.values()).count(s)) for s in Stage}


def test_a_pod_held_at_the_gate_shows_waiting_gate_in_the_record_the_cli_the_ui_and_metrics(e2e: E2E) -> None:
    """While the controller pod's gate is closed: the KDRollout records it waiting-gate and the workers pending;
    `gitops-kd status CLUSTER` (JSON and table), the UI's cluster JSON and /metrics' pods per stage say the same;
    once the gate opens every pod ends done, in the record and in /metrics."""
    controller = e2e.start_controller(
        listen=("127.0.0.1", 0), ui=UiSettings(refresh_seconds=0.25, cache_seconds=0.1), metrics=ControllerMetrics()
    )
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    roles = e2e.pods_by_role()
    ctl, workers = roles["controller"][0], roles["worker"]
    reason = exec_unavailable(e2e, ctl)
    if reason is not None:
        pytest.skip(f"embedded node cannot exec into the app container: {reason}")
    assert controller.http is not None
    e2e.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=gated_stanza("true"))}, "hello 2.0.0 gated")
    wait_for("the controller pod recorded at the gate", lambda: _recorded(e2e).get(ctl) == "waiting-gate", 60)
    recorded = _recorded(e2e)
    assert recorded == {ctl: "waiting-gate", **{w: "pending" for w in workers}}, recorded
    assert _cli_stages(e2e) == recorded
    table = _cli(e2e)
    assert "STAGE" in table.stdout and any(ctl in line and "waiting-gate" in line for line in table.stdout.splitlines()), (
        table.stdout
    )
    cells = _ui_cells(controller.http.url, e2e.ns)
    assert cells == {ctl: ("gate", "waiting-gate"), **{w: ("outdated", "pending") for w in workers}}, cells
    held = _counts(recorded)
    assert held["waiting-gate"] == 1 and held["pending"] == len(workers) >= 1
    wait_for("/metrics' pods per stage at the gate", lambda: _stage_series(controller.http.url) == held, 30)
    e2e.sh(ctl, "touch /var/lib/hello/go")
    e2e.wait_ready_at("2.0.0", timeout=90)
    assert set(_recorded(e2e).values()) == {"done"} and set(_cli_stages(e2e).values()) == {"done"}
    done = _counts(_recorded(e2e))
    wait_for("/metrics' pods per stage all done", lambda: _stage_series(controller.http.url) == done, 30)
