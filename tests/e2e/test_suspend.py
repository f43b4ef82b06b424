"""`gitops-kd suspend` / `resume` through the CLI, against a live upgrade, across a controller restart."""

from __future__ import annotations

from click.testing import CliRunner

from gitops_kd.cli import main
from gitops_kd.plan.actions import Wait
from gitops_kd.plan.suspend import SUSPENDED_STEP
from tests.e2e.harness import E2E, KD, PodWatch, git, pod_ready, wait_for


def cli(e2e: E2E, *args: str) -> str:
    done = CliRunner().invoke(main, [*args, "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert done.exit_code == 0, done.output
    return done.output


def held(e2e: E2E) -> bool:
    """The running controller's last plan holds hello-dev with the suspend Wait."""
    plan = e2e.controller.last_plan if e2e.controller is not None else None
    return plan is not None and any(isinstance(a, Wait) and "to be resumed" in a.reason for a in plan.actions)


def test_suspended_upgrade_stays_put_across_a_restart_then_resumes_to_the_end(e2e: E2E) -> None:
    """Invariant: a suspended cluster gets no action (no pod deleted) from any controller, including one started
    after the suspend, until it is resumed; `gitops-kd status` shows it Suspended with exit 0; resumed, the upgrade
    finishes one pod at a time."""
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    watch = PodWatch(e2e.rest, "hello-dev", expected=3)
    e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    wait_for("the first member replaced", lambda: len(watch.deleted) >= 1, 90)
    assert cli(e2e, "suspend", "hello-dev") == "kdrollout default/hello-dev suspended\n"
    wait_for("the suspend noted", lambda: ((e2e.rollout() or {}).get("status") or {}).get("step") == SUSPENDED_STEP, 30)
    wait_for("the controller holding the cluster", lambda: held(e2e), 30)
    deleted = len(watch.deleted)
    e2e.stop_controller()
    e2e.start_controller()
    wait_for("the restarted controller holding the cluster", lambda: held(e2e), 60)
    assert len(watch.deleted) == deleted, watch.deleted
    # the member deleted before the suspend comes back (the StatefulSet controller recreates it, not gitops-kd)
    wait_for("every member Ready", lambda: len(e2e.pods()) == 3 and all(pod_ready(p) for p in e2e.pods()), 60)
    assert len(watch.deleted) == deleted, watch.deleted
    status = CliRunner().invoke(main, ["status", "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert status.exit_code == 0 and "Suspended" in status.output, status.output
    assert status.output.count("suspended by an operator") == 1, status.output  # said once, not by SYNC and HEALTH
    ro = e2e.rollout() or {}
    assert ro["status"]["phase"] == "Upgrading" and ro["spec"]["suspend"] is True
    assert cli(e2e, "resume", "--app", "hello") == "kdrollout default/hello-dev resumed\n"
    ro = e2e.wait_ready_at("2.0.0", timeout=120)
    watch.stop()
    assert len(watch.deleted) == 3 and watch.max_down == 1
    assert "suspend" not in ro["spec"] and ro["status"].get("step") != SUSPENDED_STEP


def test_suspend_names_what_is_missing(e2e: E2E) -> None:
    done = CliRunner().invoke(main, ["suspend", "nope", "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert done.exit_code == 1 and "no KDRollout for cluster(s) nope in namespace default" in done.output
    done = CliRunner().invoke(main, ["resume", "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert done.exit_code == 2 and "name one or more CLUSTERs, or --app APP" in done.output


def test_a_downgrade_committed_while_suspended_waits_whole_and_keeps_its_data_rules(e2e: E2E) -> None:
    """Invariant: a downgrade committed while the cluster is suspended waits whole; resumed, it finds 2.0.0's
    downgrade.to data rules (recorded by the upgrade in the KDRollout, status.targetStanza: stock KubeDirector held
    the KDApp at 1.0.0 all along) and restores the data the upgrade set aside."""
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    upgrade = e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    e2e.wait_ready_at("2.0.0", timeout=120)
    e2e.wait_settled()
    assert all(e2e.exec(p, ["cat", "/var/lib/hello/new-in-2"]).ok for p in e2e.pods_by_role()["worker"])
    cli(e2e, "suspend", "hello-dev")
    git(e2e.repo, "revert", "--no-edit", upgrade)
    e2e.controller.trigger_poll()
    wait_for(
        "the suspended cluster held",
        lambda: (
            (plan := e2e.controller.last_plan) is not None
            and any(isinstance(a, Wait) and "cluster default/hello-dev to be resumed" in a.reason for a in plan.actions)
        ),
        60,
    )
    assert (e2e.rollout() or {})["status"]["appVersion"] == "2.0.0"
    assert e2e.rest.get(KD, "kubedirectorapps", "default", "hello")["spec"]["version"] == "1.0.0"  # held by KD
    cli(e2e, "resume", "hello-dev")
    ro = e2e.wait_ready_at("1.0.0", timeout=120)
    assert ro["status"]["history"][-1]["result"] == "Succeeded" and ro["status"]["direction"] == "downgrade"
    for pod in e2e.pods_by_role()["worker"]:  # restored: the 1.0.0 copy the upgrade set aside, not 2.0.0's data
        assert not e2e.exec(pod, ["cat", "/var/lib/hello/new-in-2"]).ok, pod
        assert e2e.exec(pod, ["cat", "/var/lib/hello/data"]).stdout == "data-1.0.0\n", pod
