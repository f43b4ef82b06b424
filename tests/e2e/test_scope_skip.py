"""A controller skips (and reports) Git objects in namespaces it does not watch, instead of applying them
every reconcile without ever seeing the result; `gitops-kd plan` prints them as notes."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.harness import E2E, KD, NS, git

CLI = [str(Path(sys.executable).parent / "gitops-kd")]
OTHER = "team-b"
SKIPPED = "outside this controller's scope"


def _in(namespace: str, text: str) -> str:
    doc = yaml.safe_load(text)
    doc["metadata"]["namespace"] = namespace
    return yaml.safe_dump(doc, sort_keys=False)


def _add_other_namespace(e2e: E2E) -> str:
    e2e.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OTHER}})
    return e2e.commit(
        {
            f"apps/{OTHER}/hello.yaml": _in(OTHER, e2e.template("apps/hello.yaml")),
            f"clusters/{OTHER}/hello-dev.yaml": _in(OTHER, e2e.template("clusters/hello-dev.yaml")),
        },
        "hello in team-b too",
    )


def test_a_manifest_in_an_unwatched_namespace_is_skipped_and_reported_once(e2e: E2E, caplog: pytest.LogCaptureFixture) -> None:
    head = _add_other_namespace(e2e)
    caplog.set_level(logging.WARNING, logger="gitops_kd.controller.planning")
    controller = e2e.start_controller()  # watches NS ("default") only
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    assert e2e.rest.get_or_none(KD, "kubedirectorapps", OTHER, "hello") is None, "applied outside the scope"
    assert e2e.rest.get_or_none(KD, "kubedirectorclusters", OTHER, "hello-dev") is None
    assert controller.source.applied_commit == head, "nothing out of scope is left pending: the commit is applied"
    plan = controller.last_plan
    assert plan is not None and plan.empty
    assert any(k.startswith(f"KubeDirectorApp {OTHER}/hello (apps/{OTHER}/hello.yaml)") for k in plan.kept)
    assert any(k.startswith(f"KubeDirectorCluster {OTHER}/hello-dev (clusters/{OTHER}/hello-dev.yaml)") for k in plan.kept)
    lines = [r.getMessage() for r in caplog.records if SKIPPED in r.getMessage()]
    assert len(lines) == 1, lines  # one line per commit, not per reconcile
    assert f"apps/{OTHER}/hello.yaml ({OTHER})" in lines[0] and f"clusters/{OTHER}/hello-dev.yaml ({OTHER})" in lines[0]
    assert head[:12] in lines[0]


def test_plan_prints_the_skipped_objects_and_plans_as_a_shard(e2e: E2E) -> None:
    _add_other_namespace(e2e)
    base = [*CLI, "plan", "--repo", str(e2e.repo), "--offline"]
    default = subprocess.run(base, capture_output=True, text=True, timeout=60)
    assert default.returncode == 0, default.stderr
    assert f"apply KubeDirectorApp {NS}/hello" in default.stdout
    assert f"KubeDirectorApp {OTHER}/hello" not in default.stdout.split("note:")[0], "nothing planned in team-b"
    assert (
        f"note: KubeDirectorCluster {OTHER}/hello-dev (clusters/{OTHER}/hello-dev.yaml): namespace {OTHER} "
        f"is outside this controller's scope (namespace {NS}); skipped" in default.stdout
    )
    shard = subprocess.run([*base, "--watch-namespace", OTHER], capture_output=True, text=True, timeout=60)
    assert shard.returncode == 0, shard.stderr
    assert f"apply KubeDirectorApp {OTHER}/hello" in shard.stdout
    assert f"create KubeDirectorCluster {OTHER}/hello-dev" in shard.stdout
    assert f"note: KubeDirectorApp {NS}/hello (apps/hello.yaml)" in shard.stdout
    every = subprocess.run([*base, "--all-namespaces"], capture_output=True, text=True, timeout=60)
    assert every.returncode == 0 and "note:" not in every.stdout, every.stdout + every.stderr
    both = subprocess.run([*base, "--all-namespaces", "--watch-namespace", OTHER], capture_output=True, text=True, timeout=60)
    assert both.returncode == 2 and "mutually exclusive" in both.stderr, both.stderr
    assert git(e2e.repo, "status", "--porcelain") == ""
