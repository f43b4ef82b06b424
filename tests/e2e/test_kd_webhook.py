"""Against a stock KubeDirector (kd_app_edits="strict", the embedded default), a live upgrade never writes the KDApp
its clusters use (KubeDirector's webhook would refuse it): it runs at the StatefulSet level, the KDApp is held at
the version the cluster was created with, and status says so (docs/design/stock-kubedirector.md). A write the API
server keeps failing (here a KDCluster update behind a webhook that cannot be reached) holds the commit as accepted,
not applied: restarts never flip the rollout back."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.observed import ObservedState
from gitops_kd.plan.planner import plan
from gitops_kd.plan.result import Plan
from gitops_kd.source import GitSource
from gitops_kd.spec.state import DesiredState
from gitops_kd.status.conditions import is_true
from tests.e2e.harness import E2E, KD, NS, wait_for

HELD = "KDApp hello held at 1.0.0 by KubeDirector while in use; clusters run 2.0.0 at the StatefulSet level"
UPDATE = "update spec of KubeDirectorCluster default/hello-dev"


@pytest.fixture
def strict(tmp_path: Path) -> Iterator[E2E]:
    world = E2E(tmp_path, kd_app_edits="strict")
    try:
        yield world
    finally:
        world.close()


def _events(e2e: E2E, reason: str, kind: str, name: str) -> list[dict[str, Any]]:
    return [
        e
        for e in e2e.rest.list("v1", "events", NS)["items"]
        if e["reason"] == reason and e["involvedObject"]["kind"] == kind and e["involvedObject"]["name"] == name
    ]


def _app_images(e2e: E2E) -> set[str]:
    return {c["image"] for p in e2e.pods() for c in p["spec"]["containers"] if c["name"] == "app"}


def test_an_upgrade_on_stock_kubedirector_runs_at_the_statefulset_level(strict: E2E) -> None:
    """Invariant: on stock KubeDirector the upgrade finishes Ready only with every pod at 2.0.0, with no write of
    the KDApp its cluster uses (no refusal, no ApplyFailed); the KDApp stays at 1.0.0 and status says why."""
    strict.start_controller()
    strict.wait_ready_at("1.0.0")
    strict.wait_settled()
    app_before = strict.rest.get(KD, "kubedirectorapps", NS, "hello")
    logged = len(strict.log)
    strict.commit({"apps/hello.yaml": strict.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    ro = strict.wait_ready_at("2.0.0", timeout=180)
    assert _app_images(strict) == {"gitops-kd/hello:2.0.0"}
    assert not any(line.startswith("apply KubeDirectorApp") for line in strict.log[logged:]), strict.log[logged:]
    assert not _events(strict, "ApplyFailed", "KubeDirectorApp", "hello")
    app = strict.rest.get(KD, "kubedirectorapps", NS, "hello")
    assert app["spec"] == app_before["spec"] and app["metadata"]["resourceVersion"] == app_before["metadata"]["resourceVersion"]
    ready = next(c for c in ro["status"]["conditions"] if c["type"] == "Ready")
    assert HELD in ready["message"], ready
    assert ro["status"]["history"][-1]["result"] == "Succeeded"
    assert ro["status"]["images"] == {"controller": "gitops-kd/hello:2.0.0", "worker": "gitops-kd/hello:2.0.0"}
    out = strict.kubectl("wait", "--for=condition=Ready", "kdrollout/hello-dev", "--timeout=10s")
    assert out.returncode == 0, out.stderr
    assert is_true(ro["status"]["conditions"], "Ready")


def _fail_cluster_updates(e2e: E2E) -> None:
    """A validating webhook (failurePolicy Fail) for KDCluster updates that cannot be reached: every update fails."""
    e2e.rest.create(
        "admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations",
        None,
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "unreachable"},
            "webhooks": [
                {
                    "name": "unreachable.example.com",
                    "clientConfig": {"url": "https://127.0.0.1:1/"},
                    "rules": [
                        {
                            "operations": ["UPDATE"],
                            "apiGroups": ["kubedirector.hpe.com"],
                            "apiVersions": ["*"],
                            "resources": ["kubedirectorclusters"],
                        }
                    ],
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                }
            ],
        },
    )


def _labelled(e2e: E2E) -> str:
    text = e2e.template("clusters/hello-dev.yaml")
    assert "  labels:\n" in text
    return text.replace("  labels:\n", "  labels:\n    team: blue\n", 1)


def _upgrade_behind_a_failing_write(e2e: E2E) -> str:
    """hello 2.0.0 with a KDCluster change whose write keeps failing: the commit is accepted, never applied."""
    _fail_cluster_updates(e2e)
    head = e2e.commit(
        {"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml"), "clusters/hello-dev.yaml": _labelled(e2e)},
        "hello 2.0.0, team blue",
    )
    wait_for(
        "ApplyFailed event on KDCluster hello-dev", lambda: _events(e2e, "ApplyFailed", "KubeDirectorCluster", "hello-dev"), 60
    )
    wait_for(
        "the attempt to 2.0.0 started", lambda: ((e2e.rollout() or {}).get("status") or {}).get("targetVersion") == "2.0.0", 60
    )
    return head


def _never_back(lines: list[str]) -> None:
    assert not [line for line in lines if "-> 1.0.0" in line or "hello 1.0.0" in line], lines


def test_restarts_while_a_write_keeps_failing_never_flip_the_rollout(strict: E2E) -> None:
    """Invariant: a restarted controller plans nothing before its first poll, so a rollout whose commit is accepted
    but not applied (a write keeps failing) stays on its attempt to 2.0.0 across restarts instead of flipping back
    to 1.0.0."""
    strict.start_controller()
    strict.wait_ready_at("1.0.0")
    strict.wait_settled()
    _upgrade_behind_a_failing_write(strict)
    attempt = (strict.rollout() or {})["status"]["attempt"]
    for _ in range(2):
        strict.stop_controller()
        logged = len(strict.log)
        controller = strict.start_controller()
        wait_for("a plan after the restart", lambda c=controller: c.last_plan, 30)  # type: ignore[misc]
        wait_for("the KDCluster written (and failing) again", lambda n=logged: UPDATE in strict.log[n:], 60)
        _never_back(strict.log[logged:])
        status = (strict.rollout() or {})["status"]
        assert (status["targetVersion"], status["attempt"]) == ("2.0.0", attempt), status


class FleetHeldForParts:
    """The real planner, recording the commit of every part (cluster or app key) planned. The first whole-fleet
    plan waits up to `hold` seconds for a part's plan: the window in which a part key woken by the first poll
    would plan the applied commit loaded at start, if the controller let it plan before the fleet chose."""

    def __init__(self, hold: float) -> None:
        self.hold = hold
        self.part_commits: list[str] = []
        self.part_planned = threading.Event()
        self.fleet_plans = 0
        self.lock = threading.Lock()

    def __call__(self, desired: DesiredState, observed: ObservedState, *, now: datetime, partial: bool = False) -> Plan:
        if partial:
            with self.lock:
                self.part_commits.append(desired.commit)
            self.part_planned.set()
        else:
            with self.lock:
                self.fleet_plans += 1
                first = self.fleet_plans == 1
            if first:
                self.part_planned.wait(self.hold)
        return plan(desired, observed, now=now, partial=partial)


def test_after_a_restart_no_part_plans_the_older_applied_commit_before_the_fleet_chose(strict: E2E) -> None:
    """Invariant: after a restart, a cluster or app key plans only the commit the first fleet reconcile chose
    (the accepted 2.0.0 one, whose KDCluster write keeps failing), never the older applied commit loaded at start;
    so the rollout keeps its attempt whatever the timing of the per-key workers."""
    strict.start_controller()
    strict.wait_ready_at("1.0.0")
    strict.wait_settled()
    assert strict.controller is not None
    applied = strict.controller.source.applied_commit
    head = _upgrade_behind_a_failing_write(strict)
    assert applied not in (None, head)
    attempt = (strict.rollout() or {})["status"]["attempt"]
    strict.stop_controller()
    planner = FleetHeldForParts(hold=3.0)
    source = GitSource(f"file://{strict.repo}", "main", strict.tmp / "source-cache", default_namespace=NS)
    assert source.applied_commit == applied  # the failing KDCluster write kept 2.0.0 from being marked applied
    logged = len(strict.log)
    strict.start_controller(source=source, planner=planner, workers=3)
    wait_for("the KDCluster written (and failing) again", lambda: UPDATE in strict.log[logged:], 60)
    _never_back(strict.log[logged:])
    with planner.lock:
        commits = list(planner.part_commits)
    assert commits and set(commits) == {head}, f"parts planned {commits}; the applied commit was {applied}"
    status = (strict.rollout() or {})["status"]
    assert (status["targetVersion"], status.get("attempt")) == ("2.0.0", attempt)
