"""Credentials never leave the process: a real `gitops-kd run` whose repository URL carries a token and whose Slack
webhook fails, on the embedded cluster; every surface that shows the URL shows it redacted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.status.source import PLURAL
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess
from tests.drift.receiver import Receiver
from tests.e2e.harness import E2E, NS, git

LEASE = "gitops-kd"
TOKEN = "TOKENs3cr3t0123456789"
SECRET_URL = f"https://user:{TOKEN}@127.0.0.1:1/x.git"  # nothing listens on port 1: the host is down
SHOWN_URL = "https://***@127.0.0.1:1/x.git"
SLACK_SECRET = "XoXoSlackSecretPath42"


def status(world: E2E) -> dict[str, Any]:
    obj = world.rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, NS, LEASE) or {}
    return obj.get("status") or {}


def events(world: E2E) -> list[dict[str, Any]]:
    return list(world.rest.list("v1", "events", NS)["items"])


def _leaks(text: str) -> list[str]:
    return [secret for secret in (TOKEN, SLACK_SECRET) if secret in text]


@pytest.fixture()
def world(tmp_path: Path) -> Iterator[E2E]:
    world = E2E(tmp_path)
    try:
        yield world
    finally:
        world.close()


def test_a_token_in_the_repo_url_and_a_slack_webhook_path_reach_no_surface(world: E2E, tmp_path: Path) -> None:
    """Invariant: credentials never leave the process. The repository URL carries `user:TOKEN@` (git rewrites it to
    the local repository with url.<path>.insteadOf, so the controller applies from it; then the repository goes
    away and the URL's host is down) and the Slack webhook answers 500: the GitOpsKDSource status, the Events, every
    /ui/api/* answer, /metrics, the alerts sent and the log show the URL only as https://***@..., and neither the
    token nor the Slack secret path appears anywhere."""
    with Receiver([500] * 1000) as slack:
        slack_url = slack.url.replace("/hook", f"/services/T000/B000/{SLACK_SECRET}")
        env = {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": f"url.{world.repo}.insteadOf",
            "GIT_CONFIG_VALUE_0": SECRET_URL,
        }
        proc = RunProcess(
            "ctl",
            tmp_path,
            world.cluster.kubeconfig,
            SECRET_URL,
            "--namespace",
            NS,
            "--no-leader-elect",
            "--alert-slack",
            slack_url,
            env=env,
        )
        try:
            world.wait_ready_at("1.0.0", timeout=120)
            hidden = world.repo.with_name("repo-away")
            world.repo.rename(hidden)
            wait_for(
                "Stalled GitUnreadable",
                lambda: any(c["reason"] == "GitUnreadable" for c in status(world).get("conditions") or ()),
                60,
            )
            wait_for("the git-health alert posted to Slack (and refused)", lambda: slack.bodies, 30)
            wait_for("a failed Slack delivery logged", lambda: "alert slack" in proc.log() and "attempt" in proc.log(), 30)
            shown: dict[str, str] = {"status": json.dumps(status(world)), "events": json.dumps(events(world))}
            fleet = json.loads(proc.get("/ui/api/fleet")[1])
            shown["ui fleet"] = json.dumps(fleet)
            cluster = proc.get(f"/ui/api/clusters/{NS}/hello-dev")
            history = proc.get(f"/ui/api/apps/{NS}/hello/history")
            assert cluster[0] == 200 and history[0] == 200, (cluster, history)
            shown["ui cluster"], shown["ui app history"] = cluster[1], history[1]
            shown["ui page"] = proc.get("/ui/")[1]
            shown["metrics"] = proc.get("/metrics")[1]
            shown["slack"] = json.dumps(slack.bodies)
            shown["log"] = proc.log()
        finally:
            proc.stop()
            if not world.repo.exists():
                hidden.rename(world.repo)
        shown["log"] = proc.log()
    leaks = {where: _leaks(text) for where, text in shown.items() if _leaks(text)}
    assert not leaks, f"credentials shown: {leaks}"
    for where in ("status", "events", "ui fleet", "slack", "log"):
        assert SHOWN_URL in shown[where], f"{where} does not name the (redacted) repository URL"
    assert slack_url.split("/services")[0] + "/***" in shown["log"], "the failed Slack delivery is not logged redacted"
    git(world.repo, "rev-parse", "HEAD")  # the repository is back for the teardown
