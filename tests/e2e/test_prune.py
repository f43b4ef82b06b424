"""Prune end to end: a KDCluster or KDApp file deleted from Git, with `gitops-kd run --prune` and without."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E, wait_for

CLI = [str(Path(sys.executable).parent / "gitops-kd")]
KD = "kubedirector.hpe.com/v1beta1"


def _run(e2e: E2E, *extra: str) -> RunProcess:
    """`gitops-kd run` (single replica) with /metrics on an ephemeral port."""
    return RunProcess(
        "controller", e2e.tmp, e2e.cluster.kubeconfig, str(e2e.repo), "--no-leader-elect", "--log-level", "warning", *extra
    )


def _metrics(run: RunProcess) -> str:
    status, text = run.get("/metrics")
    assert status == 200, text
    return text


def _wait_applied(run: RunProcess, commit: str) -> None:
    wait_for(
        f"commit {commit[:12]} applied", lambda: f'gitops_kd_applied_commit_info{{commit="{commit}"}} 1.0' in _metrics(run), 60
    )


def _plan(e2e: E2E, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "plan", "--repo", str(e2e.repo), "--kubeconfig", str(e2e.cluster.kubeconfig), *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _names(e2e: E2E, api: str, plural: str) -> set[str]:
    return {o["metadata"]["name"] for o in e2e.rest.list(api, plural, "default")["items"]}


def _other_app(e2e: E2E) -> str:
    return e2e.template("apps/hello.yaml").replace("name: hello\n", "name: other\n", 1)


def _events(e2e: E2E, reason: str) -> list[dict[str, Any]]:
    return [e for e in e2e.rest.list("v1", "events", "default")["items"] if e["reason"] == reason]


def test_files_deleted_from_git_are_pruned_cluster_first(e2e: E2E) -> None:
    e2e.commit({"apps/other.yaml": _other_app(e2e)}, "add the app other")
    run = _run(e2e, "--prune")
    try:
        e2e.wait_ready_at("1.0.0")
        wait_for("the app other applied", lambda: "other" in _names(e2e, KD, "kubedirectorapps"), 30)
        assert _names(e2e, "apps/v1", "statefulsets")
        series = 'gitops_kd_rollout_phase{cluster="hello-dev",namespace="default",phase="Idle"} 1.0'
        wait_for("hello-dev's phase series", lambda: series in _metrics(run), 30)
        retire = e2e.commit({"clusters/hello-dev.yaml": None, "apps/hello.yaml": None}, "retire hello")
        wait_for(
            "hello-dev and its StatefulSets gone",
            lambda: not _names(e2e, KD, "kubedirectorclusters") and not _names(e2e, "apps/v1", "statefulsets"),
            90,
        )
        wait_for("the app hello pruned once unused", lambda: _names(e2e, KD, "kubedirectorapps") == {"other"}, 60)
        _wait_applied(run, retire)
        # the metric series of a cluster go with it (not left at their last value)
        wait_for("hello-dev's series removed", lambda: 'cluster="hello-dev"' not in _metrics(run), 30)
        pruned = {e["involvedObject"]["name"]: e for e in _events(e2e, "Pruned")}
        assert set(pruned) == {"hello-dev", "hello"}
        assert pruned["hello-dev"]["involvedObject"]["kind"] == "KubeDirectorCluster"
        # a commit emptying the repository is refused, not taken as "delete everything"
        e2e.commit({"apps/other.yaml": None}, "empty")
        wait_for("the refusal counted in /metrics", lambda: "gitops_kd_refused_commits_total 1.0" in _metrics(run), 30)
        assert _names(e2e, KD, "kubedirectorapps") == {"other"}
        assert "refusing to prune the 1 object(s)" in run.log(), run.log()[-3000:]
    finally:
        assert run.stop() == 0, run.log()[-3000:]
    refused = _plan(e2e, "--prune")
    assert refused.returncode == 1 and "refusing to prune the 1 object(s)" in refused.stdout, refused.stdout


def test_without_prune_a_deleted_file_leaves_the_cluster_and_plan_says_so(e2e: E2E) -> None:
    e2e.commit({"apps/other.yaml": _other_app(e2e)}, "add the app other")
    run = _run(e2e)
    try:
        e2e.wait_ready_at("1.0.0")
        retire = e2e.commit({"clusters/hello-dev.yaml": None}, "retire hello-dev")
        _wait_applied(run, retire)
        assert _names(e2e, KD, "kubedirectorclusters") == {"hello-dev"} and not _events(e2e, "Pruned")
        planned = _plan(e2e)
        assert planned.returncode == 0, planned.stdout + planned.stderr
        assert "note: KubeDirectorCluster default/hello-dev: not in Git, kept (prune is off)" in planned.stdout
        assert "prune KubeDirectorCluster default/hello-dev" in _plan(e2e, "--prune").stdout
    finally:
        assert run.stop() == 0, run.log()[-3000:]
