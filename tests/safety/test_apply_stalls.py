"""A KDApp or KDCluster write that keeps failing stalls the cluster's KDRollout, visibly, and recovers.

Each test names the invariant it checks. They run the real controller against the embedded cluster (a denying
admission webhook served like KubeDirector's, or the API server's fault injection) with a real Git repo and the CLI.

"""

from __future__ import annotations

from typing import Any

from click.testing import CliRunner, Result

from gitops_kd.cli import main
from gitops_kd.constants import ROLLOUT_PHASES, STALL_AFTER_FAILURES
from gitops_kd.server.metrics import ControllerMetrics
from kdsim.apiserver import webhook_match
from kdsim.apiserver.webhooks import Builtin
from tests.e2e.harness import E2E, KD, NS, git, wait_for
from tests.e2e.test_kd_webhook import strict

__all__ = ["strict"]  # the fixture: a world whose KubeDirector refuses KDApp edits as stock KubeDirector does


def status_of(e2e: E2E) -> dict[str, Any]:
    return (e2e.rollout() or {}).get("status") or {}


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions") or () if c["type"] == type_), {})


def events(e2e: E2E, reason: str, kind: str, name: str) -> list[dict[str, Any]]:
    return [
        e
        for e in e2e.rest.list("v1", "events", NS)["items"]
        if e.get("reason") == reason and e["involvedObject"]["kind"] == kind and e["involvedObject"]["name"] == name
    ]


def cli_status(e2e: E2E) -> Result:
    return CliRunner().invoke(main, ["status", "--kubeconfig", str(e2e.cluster.kubeconfig)])


def phase_metric(metrics: ControllerMetrics) -> dict[str, float | None]:
    """gitops_kd_rollout_phase of hello-dev, per phase."""
    return {
        p: metrics.registry.get_sample_value("gitops_kd_rollout_phase", {"namespace": NS, "cluster": "hello-dev", "phase": p})
        for p in ROLLOUT_PHASES
    }


def wait_phase_metric(metrics: ControllerMetrics, phase: str) -> None:
    wait_for(
        f"gitops_kd_rollout_phase of hello-dev 1 for {phase} only",
        lambda: phase_metric(metrics) == {p: float(p == phase) for p in ROLLOUT_PHASES} or None,
        60,
    )


def wait_stalled(e2e: E2E, reason: str, timeout: float = 120) -> dict[str, Any]:
    def stalled() -> dict[str, Any] | None:
        status = status_of(e2e)
        return status if status.get("stalledReason") == reason else None

    return wait_for(f"the KDRollout Stalled with {reason}", stalled, timeout)


def wait_recovered(e2e: E2E, version: str, timeout: float = 120) -> dict[str, Any]:
    def recovered() -> dict[str, Any] | None:
        status = status_of(e2e)
        ready = condition(status, "Ready").get("status") == "True"
        fine = ready and status.get("phase") == "Idle" and not condition(status, "Stalled")
        return status if fine and status.get("appVersion") == version and not status.get("applyFailure") else None

    return wait_for(f"the KDRollout Idle and Ready at {version}, no apply failure recorded", recovered, timeout)


def label_while_updates_fail(e2e: E2E, metrics: ControllerMetrics | None = None) -> str:
    """hello-dev Ready at 1.0.0, then every KDCluster update answered with 500, then a commit adding a label to
    hello-dev (a KDCluster write). Returns the commit."""
    e2e.start_controller(metrics=metrics)
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    e2e.cluster.faults.add(
        "error", verb="update", resource="kubedirectorclusters", count=10_000, message="etcdserver: request timed out"
    )
    text = e2e.template("clusters/hello-dev.yaml").replace('gitops-kd.io/wave: "0"\n', 'gitops-kd.io/wave: "0"\n    team: blue\n')
    assert "team: blue" in text
    return e2e.commit({"clusters/hello-dev.yaml": text}, "hello-dev: team label")


def refuse_cluster_updates(e2e: E2E) -> None:
    """A validating webhook, served inside the embedded API server like KubeDirector's, denying every KDCluster
    update with DENIED_MESSAGE (stock KubeDirector no longer refuses gitops-kd's KDApp writes: it never makes them
    while clusters use the app, docs/design/stock-kubedirector.md)."""
    config = {
        "name": "deny.example.com",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
        "rules": [
            {
                "operations": ["UPDATE"],
                "apiGroups": ["kubedirector.hpe.com"],
                "apiVersions": ["*"],
                "resources": ["kubedirectorclusters"],
            }
        ],
    }
    dispatcher = e2e.cluster.server.webhooks
    dispatcher.builtins = (
        *dispatcher.builtins,
        Builtin(webhook_match.defaulted(config), lambda request: {"allowed": False, "status": {"message": DENIED_MESSAGE}}),
    )


DENIED_MESSAGE = "KubeDirectorCluster edits are frozen"
DENIED = f'admission webhook "deny.example.com" denied the request: {DENIED_MESSAGE}'


def test_kdcluster_write_a_webhook_keeps_refusing_stalls_with_its_message_and_a_revert_recovers(strict: E2E) -> None:
    """Invariant: a KDCluster write that an admission webhook refuses STALL_AFTER_FAILURES times in a row stalls the
    cluster's KDRollout (Stalled=True, reason ApplyRefused, the webhook's denial) with a Warning event on the
    KDCluster, and `gitops-kd status` exits 1 naming it, instead of a retry every 30 s forever; the count lives in
    the cluster (a restarted controller goes on from it, not from 1); the commit reverting the change lifts the
    stall and the cluster is Ready again, no pod touched."""
    strict.start_controller()
    strict.wait_ready_at("1.0.0")
    strict.wait_settled()
    pods_before = sorted((p["metadata"]["name"], p["metadata"]["uid"]) for p in strict.pods())
    refuse_cluster_updates(strict)
    text = strict.template("clusters/hello-dev.yaml").replace(
        'gitops-kd.io/wave: "0"\n', 'gitops-kd.io/wave: "0"\n    team: blue\n'
    )
    change = strict.commit({"clusters/hello-dev.yaml": text}, "hello-dev: team label")

    status = wait_stalled(strict, "ApplyRefused")
    assert status["phase"] == "Stalled" and DENIED in status["message"], status
    assert f"{STALL_AFTER_FAILURES} times in a row" in status["message"]
    stalled = condition(status, "Stalled")
    assert stalled["status"] == "True" and stalled["reason"] == "ApplyRefused" and DENIED in stalled["message"]
    record = status["applyFailure"]
    assert (record["kind"], record["name"], record["failures"], record["code"]) == (
        "KubeDirectorCluster",
        "hello-dev",
        STALL_AFTER_FAILURES,
        400,
    ), record
    [warning] = wait_for(
        "the UpgradeStalled Warning on the KDCluster",
        lambda: events(strict, "UpgradeStalled", "KubeDirectorCluster", "hello-dev"),
        30,
    )
    assert warning["type"] == "Warning" and warning["message"].startswith("ApplyRefused: ")
    assert DENIED in warning["message"]
    refused = events(strict, "ApplyFailed", "KubeDirectorCluster", "hello-dev")
    assert sum(e.get("count") or 1 for e in refused) >= STALL_AFTER_FAILURES
    assert all(e["type"] == "Warning" and DENIED in e["message"] for e in refused)
    shown = cli_status(strict)
    assert shown.exit_code == 1, shown.output
    assert "Stalled" in shown.output and "ApplyRefused" in shown.output, shown.output

    strict.stop_controller()  # another process reads the count from the KDRollout
    logged = len(strict.log)
    strict.start_controller()
    wait_for(
        "the KDCluster written (and refused) again after the restart",
        lambda: "update spec of KubeDirectorCluster default/hello-dev" in strict.log[logged:],
        60,
    )
    status = status_of(strict)
    assert status["stalledReason"] == "ApplyRefused" and status["applyFailure"]["failures"] >= STALL_AFTER_FAILURES

    git(strict.repo, "revert", "--no-edit", change)
    assert strict.controller is not None
    strict.controller.trigger_poll()
    status = wait_recovered(strict, "1.0.0")
    assert condition(status, "Ready")["status"] == "True"
    assert "team" not in (strict.rest.get(KD, "kubedirectorclusters", NS, "hello-dev")["metadata"].get("labels") or {})
    assert sorted((p["metadata"]["name"], p["metadata"]["uid"]) for p in strict.pods()) == pods_before
    shown = cli_status(strict)
    assert shown.exit_code == 0, shown.output


def test_kdcluster_write_the_api_server_keeps_failing_stalls_then_the_write_succeeding_recovers(e2e: E2E) -> None:
    """Invariant: a KDCluster write the API server answers with 500 STALL_AFTER_FAILURES times in a row stalls the
    cluster's KDRollout (Stalled=True, reason ApplyFailed, the server's message) with Warning events on the KDCluster
    and a non-zero `gitops-kd status`; once the server takes the write, the stall is lifted (StallLifted,
    Reconciling) and the cluster is Ready again with the change from Git applied. The phase metric says Stalled,
    then Idle."""
    metrics = ControllerMetrics()
    label_while_updates_fail(e2e, metrics)

    status = wait_stalled(e2e, "ApplyFailed")
    assert "(500): Internal error occurred: etcdserver: request timed out" in status["message"], status
    stalled = condition(status, "Stalled")
    assert stalled["status"] == "True" and stalled["reason"] == "ApplyFailed"
    assert status["applyFailure"]["code"] == 500 and status["applyFailure"]["phase"] == "Idle"
    failed = events(e2e, "ApplyFailed", "KubeDirectorCluster", "hello-dev")
    assert failed and all(e["type"] == "Warning" for e in failed)
    [warning] = wait_for(
        "the UpgradeStalled Warning on the KDCluster",
        lambda: events(e2e, "UpgradeStalled", "KubeDirectorCluster", "hello-dev"),
        30,
    )
    assert warning["type"] == "Warning" and warning["message"].startswith("ApplyFailed: ")
    shown = cli_status(e2e)
    assert shown.exit_code == 1, shown.output
    assert "ApplyFailed" in shown.output, shown.output
    wait_phase_metric(metrics, "Stalled")

    e2e.cluster.faults.clear()
    [lifted] = wait_for("the StallLifted event", lambda: events(e2e, "StallLifted", "KubeDirectorCluster", "hello-dev"), 90)
    assert lifted["type"] == "Normal" and f"succeeded after {STALL_AFTER_FAILURES}" in lifted["message"]
    wait_recovered(e2e, "1.0.0")
    wait_phase_metric(metrics, "Idle")
    live = e2e.rest.get(KD, "kubedirectorclusters", NS, "hello-dev")
    assert live["metadata"]["labels"]["team"] == "blue"
    shown = cli_status(e2e)
    assert shown.exit_code == 0, shown.output


def test_kdcluster_write_stalled_by_500s_is_lifted_by_a_revert_without_any_write(e2e: E2E) -> None:
    """Invariant: an apply stall ends when Git no longer asks for the failing write: after a `git revert` of the
    KDCluster change the stall is lifted (StallLifted, Reconciling, then Ready) although the API server still fails
    every KDCluster update, and `gitops-kd status` exits 0 again."""
    change = label_while_updates_fail(e2e)
    wait_stalled(e2e, "ApplyFailed")
    assert cli_status(e2e).exit_code == 1

    git(e2e.repo, "revert", "--no-edit", change)
    assert e2e.controller is not None
    e2e.controller.trigger_poll()
    [lifted] = wait_for("the StallLifted event", lambda: events(e2e, "StallLifted", "KubeDirectorCluster", "hello-dev"), 60)
    assert "Git no longer asks for the write of KubeDirectorCluster default/hello-dev" in lifted["message"]
    wait_recovered(e2e, "1.0.0")
    assert e2e.cluster.faults.rules(), "the API server still fails KDCluster updates"
    assert "team" not in (e2e.rest.get(KD, "kubedirectorclusters", NS, "hello-dev")["metadata"].get("labels") or {})
    shown = cli_status(e2e)
    assert shown.exit_code == 0, shown.output
