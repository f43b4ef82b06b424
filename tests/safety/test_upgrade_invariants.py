"""Live upgrades stay correct when a write fails, across up/down/up cycles and on same-version image changes.

Each test names the invariant it checks. They run the real controller against the embedded cluster with its
fault injection and a real Git repo (tests/e2e/harness.py).
"""

from __future__ import annotations

from typing import Any

from click.testing import CliRunner

from gitops_kd.cli import main
from kdsim.images import ImageBehavior
from kdsim.images import store_for as images_of
from tests.e2e.harness import E2E, HELLO_1, git, wait_for
from tests.e2e.test_upgrade_steps import start_with_exec

NS = "default"


def images(e2e: E2E) -> dict[str, str]:
    """Pod name -> image of its app container."""
    return {p["metadata"]["name"]: next(c["image"] for c in p["spec"]["containers"] if c["name"] == "app")
            for p in e2e.pods()}


def reasons(e2e: E2E) -> list[str]:
    return [e.get("reason", "") for e in e2e.rest.list("v1", "events", NS)["items"]]


def test_failed_status_write_at_rollout_start_never_reports_ready_on_old_pods(e2e: E2E) -> None:
    """Invariant: the KDRollout is Ready at a version only when every pod runs that version's image, even when
    the status write that starts the rollout fails (500 once)."""
    start_with_exec(e2e)
    e2e.cluster.faults.fail_next(1, verb="patch", resource="kdrollouts/status")
    e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    ro = e2e.wait_ready_at("2.0.0", timeout=120)
    assert set(images(e2e).values()) == {"gitops-kd/hello:2.0.0"}
    assert ro["status"]["direction"] == "upgrade"
    assert reasons(e2e).count("HookSucceeded") == 3


def test_revert_of_the_revert_runs_migration_and_hook_again_and_keeps_user_data(e2e: E2E) -> None:
    """Invariant: every upgrade attempt runs its migrations and hook once per pod, however many up/down cycles
    came before, and the user's data stays in place (not only under .gitops-kd/old)."""
    roles = start_with_exec(e2e)
    everyone = roles["controller"] + roles["worker"]
    for pod in everyone:
        e2e.sh(pod, "echo user-data > /var/lib/hello/user.txt")
    upgrade = e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    e2e.wait_ready_at("2.0.0", timeout=120)
    git(e2e.repo, "revert", "--no-edit", upgrade)
    e2e.controller.trigger_poll()
    e2e.wait_ready_at("1.0.0", timeout=120)
    revert = git(e2e.repo, "rev-parse", "HEAD")
    git(e2e.repo, "revert", "--no-edit", revert)
    e2e.controller.trigger_poll()
    ro = e2e.wait_ready_at("2.0.0", timeout=150)
    assert ro["status"]["direction"] == "upgrade"
    for pod in everyone:
        assert e2e.sh(pod, "cat /var/lib/hello/user.txt") == "user-data\n"
        assert e2e.sh(pod, "cat /var/lib/hello/schema-version") == "2\n"
        assert e2e.sh(pod, "cat /var/lib/hello/upgrade.log") == "upgraded-to-2.0.0\n"
    seen = reasons(e2e)
    assert seen.count("HookSucceeded") == 6 and seen.count("MigrationSucceeded") == 6


def test_same_version_image_change_replaces_every_pod_one_at_a_time(e2e: E2E) -> None:
    """Invariant: a change that needs pods replaced (a rebuilt image under the same version) goes through the
    one-pod-at-a-time machinery: not Ready until every pod runs the new image, never two pods down."""
    start_with_exec(e2e)
    images_of(e2e.cluster).add("gitops-kd/hello:1.0.0-r2", HELLO_1, behavior=ImageBehavior(ready_delay_seconds=0.1))
    text = e2e.template("apps/hello.yaml").replace("gitops-kd/hello:1.0.0", "gitops-kd/hello:1.0.0-r2")
    assert "1.0.0-r2" in text
    e2e.commit({"apps/hello.yaml": text}, "hello 1.0.0 rebuilt")

    def all_rebuilt() -> bool:
        return set(images(e2e).values()) == {"gitops-kd/hello:1.0.0-r2"}
    wait_for("every pod on the rebuilt image", all_rebuilt, 120)
    e2e.wait_ready_at("1.0.0", timeout=60)
    e2e.wait_settled()


def test_exec_the_api_server_keeps_refusing_stalls_with_a_reason_and_status_exits_1(e2e: E2E) -> None:
    """Invariant: a failure that repeats becomes a Stall with a named reason (ExecFailed), a Warning event and a
    non-zero `gitops-kd status`, instead of a retry every 2 s forever."""
    start_with_exec(e2e)
    e2e.cluster.faults.add("error", verb="*", resource="pods/exec", count=10_000, message="exec refused")
    e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")

    def stalled() -> dict[str, Any] | None:
        status = (e2e.rollout() or {}).get("status") or {}
        return status if status.get("stalledReason") == "ExecFailed" else None
    status = wait_for("the rollout stalled with ExecFailed", stalled, 120)
    assert "could not be started or gave no answer 5 times in a row" in status["message"] and "exec refused" in status["message"]
    def stalled_warnings() -> list[dict[str, Any]]:  # written just after the status
        return [e for e in e2e.rest.list("v1", "events", NS)["items"]
                if e.get("reason") == "UpgradeStalled" and e.get("type") == "Warning"]
    warnings = wait_for("the UpgradeStalled Warning event", stalled_warnings, 30)
    assert "ExecFailed" in warnings[0]["message"]
    e2e.cluster.faults.clear()
    shown = CliRunner().invoke(main, ["status", "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert shown.exit_code == 1, shown.output
    assert "ExecFailed" in shown.output or "exec" in shown.output.lower()
