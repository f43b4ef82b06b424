"""An app's history survives a native switch of a cluster's spec.app (KubeDirector's live-app-upgrade branch): after
hello-dev moves from hello to hello-v2, `gitops-kd history hello` and the UI's history page of hello still list
hello-dev's versions, hello-v2's list the same cluster history, and each entry names the app it was of."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.server.ui import UiSettings
from tests.e2e.harness import E2E
from tests.e2e.test_native_upgrade import hello_v2, on_app

CLI = [str(Path(sys.executable).parent / "gitops-kd")]


@pytest.fixture
def branch(tmp_path: Path) -> Iterator[E2E]:
    world = E2E(tmp_path, kd_app_edits="live-app-upgrade")
    try:
        yield world
    finally:
        world.close()


def _cli_history(world: E2E, app: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [*CLI, "history", app, "-n", world.ns, "--kubeconfig", str(world.cluster.kubeconfig), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, f"gitops-kd history {app}: exit {out.returncode}: {out.stderr}"
    rows: list[dict[str, Any]] = json.loads(out.stdout)
    return rows


def _ui_history(url: str, ns: str, app: str) -> list[dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"{url}/ui/api/apps/{ns}/{app}/history", timeout=10) as reply:
            rows: list[dict[str, Any]] = json.loads(reply.read())["data"]["entries"]
            return rows
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"GET /ui/api/apps/{ns}/{app}/history: {exc.code}") from exc


def test_an_apps_history_is_listed_under_both_names_after_a_native_switch(branch: E2E) -> None:
    """Invariant: no entry of a cluster's history is lost from an app's history when the cluster leaves the app;
    each entry names the app of its version (hello 1.0.0 Deployed, hello-v2 2.0.0 Succeeded)."""
    controller = branch.start_controller(listen=("127.0.0.1", 0), ui=UiSettings(refresh_seconds=0.25, cache_seconds=0.1))
    branch.wait_ready_at("1.0.0")
    branch.wait_settled()
    branch.commit({"apps/hello-v2.yaml": hello_v2(), "clusters/hello-dev.yaml": on_app("hello-v2")}, "hello-v2")
    branch.wait_ready_at("2.0.0", timeout=180)
    assert controller.http is not None
    want = [("hello-dev", "hello", "1.0.0", "Deployed"), ("hello-dev", "hello-v2", "2.0.0", "Succeeded")]
    for app in ("hello", "hello-v2"):
        cli = [(e["cluster"], e["app"], e["version"], e["result"]) for e in _cli_history(branch, app)]
        assert cli == want, (app, cli)
        ui = [(e["cluster"], e["app"], e["version"], e["result"]) for e in _ui_history(controller.http.url, branch.ns, app)]
        assert ui == want[::-1], (app, ui)  # the UI lists newest first
    with urllib.request.urlopen(f"{controller.http.url}/ui/apps/{branch.ns}/hello/history", timeout=10) as page:
        body = page.read().decode()
    assert '<th scope="col">App</th>' in body and "hello-v2" in body
