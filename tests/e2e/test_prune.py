"""Prune end to end: a KDCluster or KDApp file deleted from Git, with `gitops-kd run --prune` and without."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

from tests.e2e.harness import E2E, wait_for

CLI = [str(Path(sys.executable).parent / "gitops-kd")]
KD = "kubedirector.hpe.com/v1beta1"


class Run:
    """`gitops-kd run` as a process with /metrics on an ephemeral port; its stderr lines are kept."""

    def __init__(self, e2e: E2E, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [*CLI, "run", "--repo", str(e2e.repo), "--kubeconfig", str(e2e.cluster.kubeconfig), "--interval", "0.5",
             "--listen", "127.0.0.1:0", "--no-leader-elect", "--cache-dir", str(e2e.tmp / "cache"),
             "--log-level", "warning", *extra], stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stderr.readline, "")),  # type: ignore[union-attr]
                         daemon=True).start()
        self.url = wait_for("the HTTP address line", lambda: next(
            (m.group(1) for line in self.lines if (m := re.search(r"on (http://127\.0\.0\.1:\d+)", line))), None), 30)

    def metrics(self) -> str:
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as resp:
            return str(resp.read().decode())

    def wait_applied(self, commit: str) -> None:
        wait_for(f"commit {commit[:12]} applied", lambda: f'gitops_kd_applied_commit_info{{commit="{commit}"}} 1.0'
                 in self.metrics(), 60)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(60) == 0


def _plan(e2e: E2E, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "plan", "--repo", str(e2e.repo), "--kubeconfig", str(e2e.cluster.kubeconfig),
                           *extra], capture_output=True, text=True, timeout=60)


def _names(e2e: E2E, api: str, plural: str) -> set[str]:
    return {o["metadata"]["name"] for o in e2e.rest.list(api, plural, "default")["items"]}


def _other_app(e2e: E2E) -> str:
    return e2e.template("apps/hello.yaml").replace("name: hello\n", "name: other\n", 1)


def _events(e2e: E2E, reason: str) -> list[dict[str, Any]]:
    return [e for e in e2e.rest.list("v1", "events", "default")["items"] if e["reason"] == reason]


def test_files_deleted_from_git_are_pruned_cluster_first(e2e: E2E) -> None:
    e2e.commit({"apps/other.yaml": _other_app(e2e)}, "add the app other")
    run = Run(e2e, "--prune")
    try:
        e2e.wait_ready_at("1.0.0")
        wait_for("the app other applied", lambda: "other" in _names(e2e, KD, "kubedirectorapps"), 30)
        assert _names(e2e, "apps/v1", "statefulsets")
        retire = e2e.commit({"clusters/hello-dev.yaml": None, "apps/hello.yaml": None}, "retire hello")
        wait_for("hello-dev and its StatefulSets gone",
                 lambda: not _names(e2e, KD, "kubedirectorclusters") and not _names(e2e, "apps/v1", "statefulsets"),
                 90)
        wait_for("the app hello pruned once unused", lambda: _names(e2e, KD, "kubedirectorapps") == {"other"}, 60)
        run.wait_applied(retire)
        pruned = {e["involvedObject"]["name"]: e for e in _events(e2e, "Pruned")}
        assert set(pruned) == {"hello-dev", "hello"}
        assert pruned["hello-dev"]["involvedObject"]["kind"] == "KubeDirectorCluster"
        # a commit emptying the repository is refused, not taken as "delete everything"
        e2e.commit({"apps/other.yaml": None}, "empty")
        wait_for("the refusal counted in /metrics", lambda: "gitops_kd_refused_commits_total 1.0" in run.metrics(), 30)
        assert _names(e2e, KD, "kubedirectorapps") == {"other"}
        assert any("refusing to prune the 1 object(s)" in line for line in run.lines), run.lines
    finally:
        run.stop()
    refused = _plan(e2e, "--prune")
    assert refused.returncode == 2 and "refusing to prune the 1 object(s)" in refused.stdout, refused.stdout


def test_without_prune_a_deleted_file_leaves_the_cluster_and_plan_says_so(e2e: E2E) -> None:
    e2e.commit({"apps/other.yaml": _other_app(e2e)}, "add the app other")
    run = Run(e2e)
    try:
        e2e.wait_ready_at("1.0.0")
        retire = e2e.commit({"clusters/hello-dev.yaml": None}, "retire hello-dev")
        run.wait_applied(retire)
        assert _names(e2e, KD, "kubedirectorclusters") == {"hello-dev"} and not _events(e2e, "Pruned")
        planned = _plan(e2e)
        assert planned.returncode == 0, planned.stdout + planned.stderr
        assert "note: KubeDirectorCluster default/hello-dev: not in Git, kept (prune is off)" in planned.stdout
        assert "prune KubeDirectorCluster default/hello-dev" in _plan(e2e, "--prune").stdout
    finally:
        run.stop()
