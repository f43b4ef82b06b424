"""`gitops-kd plan --base/--head --kubeconfig` against the embedded cluster: same review, read requests only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.harness import E2E, git
from tests.review.repos import cli

READS = {"get", "list", "watch"}
TOKEN = "plan-reviewer"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2E]:
    """hello 1.0.0 running (brought up by the controller, then stopped); branch pr holds hello 2.0.0."""
    w = E2E(tmp_path_factory.mktemp("plan-live"))
    try:
        w.start_controller()
        w.wait_ready_at("1.0.0", timeout=120)
        w.wait_settled()
        w.stop_controller()
        git(w.repo, "checkout", "-q", "-b", "pr")
        (w.repo / "apps/hello.yaml").write_text(w.template("examples/hello-2.0.0.yaml"))
        git(w.repo, "commit", "-qam", "hello 2.0.0")
        git(w.repo, "checkout", "-q", "main")
        yield w
    finally:
        w.close()


def reviewer_kubeconfig(world: E2E, path: Path) -> Path:
    """The cluster's kubeconfig with its own bearer token, so the access log tells its requests apart."""
    config = yaml.safe_load(world.cluster.kubeconfig.read_text())
    for user in config["users"]:
        user["user"]["token"] = TOKEN
    path.write_text(yaml.safe_dump(config))
    return path


def test_plan_against_the_live_cluster_makes_no_write(world: E2E, tmp_path: Path) -> None:
    kubeconfig = reviewer_kubeconfig(world, tmp_path / "kubeconfig")
    result = cli(
        "plan", "--repo", str(world.repo), "--base", "main", "--head", "pr", "--kubeconfig", str(kubeconfig), "--format", "json"
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["against"].startswith("the live cluster")
    (cluster,) = data["clusters"]
    assert (cluster["state"], cluster["from_version"], cluster["to_version"]) == ("rollout", "1.0.0", "2.0.0")
    assert [(r["role"], r["replaced"]) for r in cluster["roles"]] == [("controller", 1), ("worker", 2)]
    assert cluster["ports"][0]["after"] == [["http-hello-http", 8081]]
    requests = world.cluster.access_log.entries(TOKEN)
    assert requests, "the plan read the cluster"
    assert {e.verb for e in requests} <= READS, [e for e in requests if e.verb not in READS]


def test_live_and_base_revision_reviews_agree(world: E2E, tmp_path: Path) -> None:
    """The cluster brought up from main shows what main's desired state synthesizes: the same Markdown."""
    kubeconfig = reviewer_kubeconfig(world, tmp_path / "kubeconfig")
    args = ["plan", "--repo", str(world.repo), "--base", "main", "--head", "pr", "--format", "markdown"]
    live = cli(*args, "--kubeconfig", str(kubeconfig)).stdout.splitlines()
    offline = cli(*args).stdout.splitlines()
    assert live[3].startswith("Compared with the live cluster") and offline[3].startswith("Compared with the base")
    assert live[:3] + live[4:] == offline[:3] + offline[4:]
