"""End to end with exec: hooks, migrations, kept/discarded data, the app gate, a controller restart mid-upgrade.

These need pods/exec into KubeDirector's app container on the embedded node; when the node cannot do it
(see exec_unavailable) they are skipped with the node's error as the reason.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import E2E, PodWatch, exec_unavailable, git, hello_app, wait_for


def start_with_exec(e2e: E2E) -> dict[str, list[str]]:
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    roles = e2e.pods_by_role()
    reason = exec_unavailable(e2e, roles["controller"][0])
    if reason is not None:
        pytest.skip(f"embedded node cannot exec into the app container: {reason}")
    return roles


def test_upgrade_runs_migration_hook_and_gate_and_keeps_data(e2e: E2E) -> None:
    roles = start_with_exec(e2e)
    everyone = roles["controller"] + roles["worker"]
    for pod in everyone:
        e2e.sh(
            pod,
            "echo user-data > /var/lib/hello/user.txt; echo mine > /etc/hello/local.conf; echo stale > /opt/hello/cache/stale",
        )
    watch = PodWatch(e2e.rest, "hello-dev", expected=3)
    e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    ro = e2e.wait_ready_at("2.0.0", timeout=120)
    watch.stop()
    assert [n for n, _r, _t in watch.deleted] == [roles["controller"][0], roles["worker"][1], roles["worker"][0]]
    assert watch.max_down == 1
    for pod in everyone:
        # hook output, seen through kubectl exec
        shown = e2e.kubectl("exec", pod, "-c", "app", "--", "cat", "/var/lib/hello/upgrade.log")
        assert shown.returncode == 0 and shown.stdout == "upgraded-to-2.0.0\n", shown.stderr
        # /var/lib/hello: migrate (old copy set aside, new image copy installed, then merged by the command)
        assert e2e.sh(pod, "cat /var/lib/hello/user.txt") == "user-data\n"
        assert e2e.sh(pod, "cat /var/lib/hello/schema-version") == "2\n"
        assert e2e.sh(pod, "cat /var/lib/hello/new-in-2") == "yes\n"
        assert e2e.sh(pod, "cat /var/lib/gitops-kd/old/var/lib/hello/user.txt") == "user-data\n"
        # /etc: keep (the PVC copy stays, including the image's old file)
        assert e2e.sh(pod, "cat /etc/hello/local.conf /etc/hello/version") == "mine\n1.0.0\n"
        # /opt/hello/cache: discard (replaced by the 2.0.0 image's copy)
        assert e2e.sh(pod, "cat /opt/hello/cache/index; test ! -e /opt/hello/cache/stale && echo gone") == "cache-2.0.0\ngone\n"
        progress = ro["status"]["pods"][pod]
        assert progress["hookDone"] and progress["gatePassed"] and len(progress["migrationsDone"]) == 1
    reasons = [e["reason"] for e in e2e.rest.list("v1", "events", "default")["items"]]
    assert reasons.count("HookSucceeded") == 3 and reasons.count("GatePassed") == 3
    assert reasons.count("MigrationSucceeded") == 3


def gated_stanza(hook: str) -> dict:
    return {
        "roleOrder": ["controller", "worker"],
        "from": [{"versions": ">=1.0.0 <2.0.0", "default": "keep"}],
        "hooks": {"postUpgrade": {"command": ["/bin/sh", "-c", hook], "timeoutSeconds": 30}},
        "gate": {
            "exec": {"command": ["/bin/sh", "-c", "test -e /var/lib/hello/go"]},
            "periodSeconds": 1,
            "timeoutSeconds": 120,
            "roles": ["controller"],
        },
    }


def test_gate_holds_the_next_pod_until_it_passes(e2e: E2E) -> None:
    roles = start_with_exec(e2e)
    ctl, workers = roles["controller"][0], roles["worker"]
    worker_uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in e2e.pods() if p["metadata"]["name"] in workers}
    watch = PodWatch(e2e.rest, "hello-dev", expected=3)
    e2e.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=gated_stanza("true"))}, "hello 2.0.0 gated")

    def gate_checked_three_times() -> bool:
        status = (e2e.rollout() or {}).get("status") or {}
        current = {p["metadata"]["name"]: p["metadata"]["uid"] for p in e2e.pods() if p["metadata"]["name"] in workers}
        assert current == worker_uids, "a worker was replaced while the controller's gate was closed"
        checks = [line for line in e2e.log if line.startswith("check upgrade gate") and line.endswith(f"/{ctl}")]
        return status.get("currentPod") == ctl and len(checks) >= 3

    wait_for("three failed gate checks in the controller pod", gate_checked_three_times, 60)
    opened = e2e.sh(ctl, "touch /var/lib/hello/go") == ""
    assert opened
    e2e.wait_ready_at("2.0.0", timeout=90)
    watch.stop()
    assert [n for n, _r, _t in watch.deleted] == [ctl, workers[1], workers[0]]
    assert watch.max_down == 1


def test_controller_killed_mid_upgrade_never_reruns_a_done_hook(e2e: E2E) -> None:
    """`gitops-kd run` is SIGKILLed once the first pod is replaced and its hook ran; a new process finishes."""
    roles = start_with_exec(e2e)
    e2e.stop_controller()  # from here on the controller is a real process that can be killed
    everyone = roles["controller"] + roles["worker"]
    watch = PodWatch(e2e.rest, "hello-dev", expected=3)
    stanza = gated_stanza("echo hook-ran >> /var/lib/hello/hook.log")
    stanza.pop("gate")
    e2e.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=stanza)}, "hello 2.0.0 with a counting hook")
    ctl = roles["controller"][0]
    first = run_process(e2e)
    try:
        wait_for(
            "the controller pod's hook done",
            lambda: (((e2e.rollout() or {}).get("status") or {}).get("pods") or {}).get(ctl, {}).get("hookDone"),
            60,
            0.02,
        )
    finally:
        first.kill()
        first.wait(30)
    second = run_process(e2e)
    try:
        e2e.wait_ready_at("2.0.0", timeout=90)
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(60) == 0
    watch.stop()
    for pod in everyone:
        assert e2e.sh(pod, "cat /var/lib/hello/hook.log") == "hook-ran\n", pod
    assert watch.max_down == 1
    assert [n for n, _r, _t in watch.deleted] == [ctl, roles["worker"][1], roles["worker"][0]]


def run_process(e2e: E2E) -> subprocess.Popen[bytes]:
    cli = str(Path(sys.executable).parent / "gitops-kd")
    return subprocess.Popen(
        [
            cli,
            "run",
            "--repo",
            str(e2e.repo),
            "--kubeconfig",
            str(e2e.cluster.kubeconfig),
            "--interval",
            "0.5",
            "--listen",
            "off",
            "--cache-dir",
            str(e2e.tmp / "proc-cache"),
            "--log-level",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_hook_interrupted_by_a_kill_is_not_rerun_until_the_operator_clears_it(e2e: E2E) -> None:
    roles = start_with_exec(e2e)
    e2e.stop_controller()
    ctl = roles["controller"][0]
    e2e.sh(ctl, "touch /var/lib/hello/slow")  # on the PVC: the upgraded pod's hook will hang on it
    stanza = gated_stanza(
        "echo start >> /var/lib/hello/hook.log; echo $$ > /var/lib/hello/hook.pid; "
        "if [ -e /var/lib/hello/slow ]; then exec sleep 60; fi; echo end >> /var/lib/hello/hook.log"
    )
    stanza.pop("gate")
    e2e.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=stanza)}, "hello 2.0.0 with a slow hook")
    first = run_process(e2e)

    def hook_started() -> bool:
        res = e2e.exec(ctl, ["cat", "/var/lib/hello/hook.log"])
        return res.exit_code == 0 and res.stdout == "start\n"

    try:
        wait_for("the hook running in the upgraded controller pod", hook_started, 60, 0.1)
    finally:
        first.kill()
        first.wait(30)
    second = run_process(e2e)
    try:
        status = wait_for(
            "the rollout stalled",
            lambda: (s := (e2e.rollout() or {}).get("status") or {}).get("stalledReason") == "StepInterrupted" and s,
            60,
        )
        assert "never finished" in status["message"] and ".started" in status["message"]
        assert e2e.sh(ctl, "cat /var/lib/hello/hook.log") == "start\n"  # not run a second time
        attempt = e2e.rollout()["status"]["attempt"]
        marker = f"/var/lib/gitops-kd/steps/{attempt}-2.0.0_{ctl}_hook.started"
        assert marker in status["message"]
        # the operator checks the pod: stops what is left of the hook, clears its marker, commits to retry
        e2e.sh(ctl, f"kill $(cat /var/lib/hello/hook.pid) 2>/dev/null; rm -f /var/lib/hello/slow; rm -rf {marker}")
        git(e2e.repo, "commit", "-q", "--allow-empty", "-m", "retry the upgrade")
        e2e.wait_ready_at("2.0.0", timeout=90)
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(60) == 0
    assert e2e.sh(ctl, "cat /var/lib/hello/hook.log") == "start\nstart\nend\n"
    for worker in roles["worker"]:
        assert e2e.sh(worker, "cat /var/lib/hello/hook.log") == "start\nend\n"
