"""Rollback end to end through Git and the embedded cluster: a git revert restores the data the upgrade kept,
a revert the app does not allow is refused, the failure policy (halt / revert-commit), and waves with soak."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from functools import partial
from typing import Any

import pytest
import yaml

from gitops_kd.plan.planner import plan
from gitops_kd.testing import wait_for
from kdsim import images
from kdsim.images import ImageBehavior
from tests.e2e.harness import E2E, HELLO_2, NS, PodWatch, exec_unavailable, git, hello_app

BROKEN = "2.0.1"  # an image whose containers never become Ready

try:
    import gitops_kd.execute.failure  # noqa: F401  (HandleFailure's executor: tests/rollback/WIRING.patch)

    WIRED = True
except ModuleNotFoundError:
    WIRED = False
needs_wiring = pytest.mark.skipif(
    not WIRED, reason="the failure policy is not wired into execute/ and controller/ yet: apply tests/rollback/WIRING.patch"
)


def start(e2e: E2E, *, exec_needed: bool = True, planner: Any = None) -> dict[str, list[str]]:
    git(e2e.repo, "config", "receive.denyCurrentBranch", "updateInstead")  # gitops-kd may push its revert
    if planner is None:
        e2e.start_controller()
    else:
        e2e.start_controller(planner=planner)
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    roles = e2e.pods_by_role()
    if exec_needed:
        reason = exec_unavailable(e2e, roles["controller"][0])
        if reason is not None:
            pytest.skip(f"embedded node cannot exec into the app container: {reason}")
    return roles


def history(e2e: E2E, app: str = "hello") -> list[dict[str, Any]]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from gitops_kd.cli import main; main()",
            "history",
            app,
            "--kubeconfig",
            str(e2e.cluster.kubeconfig),
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def events(e2e: E2E, reason: str) -> list[dict[str, Any]]:
    return [e for e in e2e.rest.list("v1", "events", NS)["items"] if e.get("reason") == reason]


def test_revert_after_upgrade_restores_the_kept_data(e2e: E2E) -> None:
    roles = start(e2e)
    everyone = roles["controller"] + roles["worker"]
    for pod in everyone:
        e2e.sh(pod, "echo user-data > /var/lib/hello/user.txt")
    upgrade = e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    e2e.wait_ready_at("2.0.0", timeout=120)
    for pod in everyone:  # 2.0.0 writes in the migrated copy
        assert e2e.sh(pod, "cat /var/lib/hello/schema-version") == "2\n"
        e2e.sh(pod, "echo written-by-2 > /var/lib/hello/user.txt")
    watch = PodWatch(e2e.rest, "hello-dev", expected=3)
    git(e2e.repo, "revert", "--no-edit", upgrade)
    revert = git(e2e.repo, "rev-parse", "HEAD")
    e2e.controller.trigger_poll()
    ro = e2e.wait_ready_at("1.0.0", timeout=120)
    watch.stop()
    assert ro["spec"]["commit"] == revert and ro["status"]["direction"] == "downgrade"
    assert watch.max_down == 1 and len(watch.deleted) == 3
    for pod in everyone:
        # /var/lib/hello: restore -> the copy the upgrade set aside is back (no 2.0.0 schema, 1.0.0 user data)
        assert e2e.sh(pod, "cat /var/lib/hello/user.txt") == "user-data\n"
        assert e2e.sh(pod, "test ! -e /var/lib/hello/schema-version && echo none") == "none\n"
        # /opt/hello/cache: discard -> the 1.0.0 image's copy
        assert e2e.sh(pod, "cat /opt/hello/cache/index") == "cache-1.0.0\n"
        assert e2e.sh(pod, "cat /var/lib/gitops-kd/version") == "1.0.0\n"
    assert not events(e2e, "HookSucceeded")[3:]  # downgrades run no hook: only the 3 of the upgrade
    rows = [(h["cluster"], h["version"], h["fromVersion"], h["commit"], h["result"]) for h in history(e2e)]
    assert rows[0][1:3] == ("1.0.0", None) and rows[0][4] == "Deployed", rows  # the first deploy
    assert rows[1:] == [
        ("hello-dev", "2.0.0", "1.0.0", upgrade, "Succeeded"),
        ("hello-dev", "1.0.0", "2.0.0", revert, "Succeeded"),
    ]


def test_revert_to_a_version_the_app_does_not_allow_is_refused(e2e: E2E) -> None:
    start(e2e, exec_needed=False)
    stanza = yaml.safe_load(e2e.template("examples/hello-2.0.0.yaml"))["spec"]["upgrade"]
    stanza.pop("downgrade")
    stanza.pop("gate")
    upgrade = e2e.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=stanza)}, "hello 2.0.0, no way back")
    e2e.wait_ready_at("2.0.0", timeout=120)
    e2e.wait_settled()
    uids = sorted(p["metadata"]["uid"] for p in e2e.pods())
    templates = {s["metadata"]["name"]: s["spec"]["template"] for s in e2e.rest.list("apps/v1", "statefulsets", NS)["items"]}
    git(e2e.repo, "revert", "--no-edit", upgrade)
    e2e.controller.trigger_poll()
    refused = wait_for("CommitRefused event", lambda: events(e2e, "CommitRefused"), 30)
    message = refused[0]["message"]
    assert "apps/hello.yaml" in message and "spec.version" in message and "downgrade 2.0.0 -> 1.0.0" in message
    app = e2e.rest.get("kubedirector.hpe.com/v1beta1", "kubedirectorapps", NS, "hello")
    assert app["spec"]["version"] == "1.0.0"  # held by stock KubeDirector all along: the cluster runs 2.0.0
    assert sorted(p["metadata"]["uid"] for p in e2e.pods()) == uids
    assert {
        s["metadata"]["name"]: s["spec"]["template"] for s in e2e.rest.list("apps/v1", "statefulsets", NS)["items"]
    } == templates
    ro = e2e.rollout()
    assert ro["spec"]["targetVersion"] == "2.0.0" and ro["status"]["appVersion"] == "2.0.0"


def broken_upgrade(e2e: E2E, policy: str) -> str:
    images.store_for(e2e.cluster).add(f"gitops-kd/hello:{BROKEN}", HELLO_2, behavior=ImageBehavior(never_ready=True))
    stanza = yaml.safe_load(e2e.template("examples/hello-2.0.0.yaml"))["spec"]["upgrade"]
    stanza.update({"podReadyTimeoutSeconds": 3, "failurePolicy": policy})
    stanza.pop("gate")
    return e2e.commit({"apps/hello.yaml": hello_app(BROKEN, upgrade=stanza)}, f"hello {BROKEN} ({policy})")


def stalled(e2e: E2E) -> dict[str, Any] | None:
    ro = e2e.rollout() or {}
    status = ro.get("status") or {}
    return ro if status.get("phase") == "Stalled" and status.get("failure") else None


@needs_wiring
def test_halt_stalls_naming_the_commit_and_keeps_the_rest_running(e2e: E2E) -> None:
    roles = start(e2e, exec_needed=False)
    bad = broken_upgrade(e2e, "halt")
    ro = wait_for("rollout Stalled and its failure handled", lambda: stalled(e2e), 60)
    status = ro["status"]
    assert status["stalledReason"] == "PodNotReady" and status["failure"]["commit"] == bad
    assert "revertCommit" not in status["failure"]
    cond = next(c for c in status["conditions"] if c["type"] == "Stalled")
    assert cond["status"] == "True" and bad[:12] in cond["message"]
    halted = events(e2e, "RolloutHalted")
    assert len(halted) == 1 and bad in halted[0]["message"] and halted[0]["type"] == "Warning"
    pods = {p["metadata"]["name"]: p for p in e2e.pods()}
    for worker in roles["worker"]:  # the workers still run 1.0.0 and serve
        assert pods[worker]["spec"]["containers"][0]["image"] == "gitops-kd/hello:1.0.0"
    assert git(e2e.repo, "log", "-1", "--format=%H") == bad  # nothing pushed
    rows = history(e2e)
    assert (rows[-1]["version"], rows[-1]["commit"], rows[-1]["result"]) == (BROKEN, bad, "Stalled")


@needs_wiring
def test_revert_commit_pushes_a_revert_and_the_cluster_goes_back(e2e: E2E) -> None:
    roles = start(e2e, exec_needed=False)
    bad = broken_upgrade(e2e, "revert-commit")
    revert = wait_for(
        "gitops-kd's revert commit in the remote", lambda: (h := git(e2e.repo, "rev-parse", "main")) != bad and h, 90
    )
    assert git(e2e.repo, "rev-parse", f"{revert}^") == bad
    body = git(e2e.repo, "show", "-s", "--format=%B", revert)
    assert body.startswith(f'Revert "hello {BROKEN} (revert-commit)"') and f"This reverts commit {bad}." in body
    assert "PodNotReady" in body
    assert body.rstrip().splitlines()[-1] == "Signed-off-by: gitops-kd <gitops-kd@localhost>"
    assert git(e2e.repo, "show", "-s", "--format=%an", revert) == "gitops-kd"
    ro = e2e.wait_ready_at("1.0.0", timeout=120)
    assert ro["spec"]["commit"] == revert
    assert {p["spec"]["containers"][0]["image"] for p in e2e.pods()} == {"gitops-kd/hello:1.0.0"}
    assert len(events(e2e, "RevertPushed")) == 1
    assert git(e2e.repo, "log", "--format=%H").split().count(revert) == 1
    assert git(e2e.repo, "rev-parse", "main") == revert  # never pushed twice
    rows = [(h["version"], h["commit"], h["result"], h.get("revertCommit")) for h in history(e2e)]
    assert rows[0][0] == "1.0.0" and rows[0][2] == "Deployed", rows
    assert rows[1:] == [(BROKEN, bad, "Reverted", revert), ("1.0.0", revert, "Succeeded", None)]
    assert sorted(roles["worker"]) == e2e.pods_by_role()["worker"]


def test_second_wave_starts_only_after_the_first_is_ready_and_soaked(e2e: E2E) -> None:
    soak = 3.0
    prod = (
        e2e.template("clusters/hello-dev.yaml")
        .replace("name: hello-dev", "name: hello-prod")
        .replace('gitops-kd.io/wave: "0"', 'gitops-kd.io/wave: "1"')
        .replace("members: 2", "members: 1")
    )
    e2e.commit({"clusters/hello-prod.yaml": prod}, "hello-prod in wave 1")
    start(e2e, exec_needed=False, planner=partial(plan, wave_soak_seconds=soak))
    e2e.wait_ready_at("1.0.0", name="hello-prod", timeout=90)
    dev_watch = PodWatch(e2e.rest, "hello-dev", expected=3)
    prod_watch = PodWatch(e2e.rest, "hello-prod", expected=2)
    offset = time.time() - time.monotonic()
    stanza = yaml.safe_load(e2e.template("examples/hello-2.0.0.yaml"))["spec"]["upgrade"]
    stanza.pop("gate")
    stanza.pop("hooks")
    stanza["from"][0]["persistDirs"].pop("/var/lib/hello")
    e2e.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=stanza)}, "hello 2.0.0 in waves")
    dev = e2e.wait_ready_at("2.0.0", timeout=120)
    e2e.wait_ready_at("2.0.0", name="hello-prod", timeout=120)
    dev_watch.stop()
    prod_watch.stop()
    ready = next(c for c in dev["status"]["conditions"] if c["type"] == "Ready")["lastTransitionTime"]
    from gitops_kd.plan.waves import parse_time

    ready_at = parse_time(ready).timestamp()  # type: ignore[union-attr]
    first_prod = min(t for _n, _r, t in prod_watch.deleted) + offset
    last_dev = max(t for _n, _r, t in dev_watch.deleted) + offset
    assert len(dev_watch.deleted) == 3 and len(prod_watch.deleted) == 2
    assert first_prod > last_dev
    # Ready's time has second precision (truncated): the soak is measured from at most 1s before it
    assert first_prod >= ready_at + soak - 0.05, first_prod - ready_at
