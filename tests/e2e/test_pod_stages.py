"""Each pod's stage in a rollout, recorded once by the planner in the KDRollout (status.pods[pod].stage) and read
by `gitops-kd status` and the web UI: the same answer through every public surface."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

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


def test_a_pod_held_at_the_gate_shows_waiting_gate_in_the_record_the_cli_and_the_ui(e2e: E2E) -> None:
    """While the controller pod's gate is closed: the KDRollout records it waiting-gate and the workers pending;
    `gitops-kd status CLUSTER` (JSON and table) and the UI's cluster JSON say the same; once the gate opens every
    pod ends done."""
    controller = e2e.start_controller(listen=("127.0.0.1", 0), ui=UiSettings(refresh_seconds=0.25, cache_seconds=0.1))
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
    e2e.sh(ctl, "touch /var/lib/hello/go")
    e2e.wait_ready_at("2.0.0", timeout=90)
    assert set(_recorded(e2e).values()) == {"done"} and set(_cli_stages(e2e).values()) == {"done"}
