"""Against a stock KubeDirector (kd_app_edits="strict"), the live upgrade's app update is refused by KD's webhook:
gitops-kd reports it as a Warning Event on the KDApp and changes nothing, no pod is touched."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.controller import Controller
from gitops_kd.observe.model import ObservedState
from gitops_kd.plan.planner import plan
from gitops_kd.plan.result import Plan
from gitops_kd.source import GitSource
from gitops_kd.spec.state import DesiredState
from tests.e2e.harness import E2E, KD, NS, wait_for

DENIED = ('admission webhook "hard-validate-cr.kubedirector.hpe.com" denied the request: \nKubeDirectorApp resource '
          "cannot be deleted or modified while referenced by the following KubeDirectorCluster resources: "
          "default/hello-dev")


@pytest.fixture
def strict(tmp_path: Path) -> Iterator[E2E]:
    world = E2E(tmp_path, kd_app_edits="strict")
    try:
        yield world
    finally:
        world.close()


def _apply_failed(e2e: E2E) -> list[dict[str, Any]]:
    return [e for e in e2e.rest.list("v1", "events", NS)["items"] if e["reason"] == "ApplyFailed"
            and e["involvedObject"]["kind"] == "KubeDirectorApp" and e["involvedObject"]["name"] == "hello"]


def _sets(e2e: E2E) -> dict[str, Any]:
    return {s["metadata"]["name"]: s["spec"] for s in e2e.rest.list("apps/v1", "statefulsets", NS)["items"]}


def test_upgrade_refused_by_kubedirectors_webhook_is_an_event_and_touches_nothing(strict: E2E) -> None:
    controller = strict.start_controller()
    strict.wait_ready_at("1.0.0")
    strict.wait_settled()
    app_before = strict.rest.get(KD, "kubedirectorapps", NS, "hello")
    pods_before = sorted((p["metadata"]["name"], p["metadata"]["uid"]) for p in strict.pods())
    sets_before = _sets(strict)
    logged = len(strict.log)
    strict.commit({"apps/hello.yaml": strict.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")

    [event] = wait_for("ApplyFailed event on KDApp hello", lambda: _apply_failed(strict), 60)
    assert event["type"] == "Warning"
    assert event["message"].startswith(f"the API server refused the change (400): {DENIED} (KubeDirector's "
                                       "admission webhook refuses"), event["message"]
    assert "docs/design/live-upgrade.md" in event["message"]
    # The ApplyApp is held for 30 s; the controller goes on re-planning but runs nothing after it.
    replanned = controller.last_plan
    controller.kick()
    wait_for("another reconcile", lambda: controller.last_plan is not replanned or None, 30)
    assert replanned is not None and not replanned.empty
    assert strict.log[logged:] == ["start upgrade of default/hello-dev: hello 1.0.0 -> 2.0.0",
                                  "apply KubeDirectorApp default/hello at version 2.0.0"], strict.log[logged:]
    app = strict.rest.get(KD, "kubedirectorapps", NS, "hello")
    assert app["spec"] == app_before["spec"] and app["spec"]["version"] == "1.0.0"
    assert sorted((p["metadata"]["name"], p["metadata"]["uid"]) for p in strict.pods()) == pods_before
    assert _sets(strict) == sets_before
    status = (strict.rollout() or {}).get("status") or {}
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or ())
    assert not (ready and status.get("appVersion") == "2.0.0"), status


def test_restarts_while_kubedirector_refuses_the_app_never_flip_the_rollout(strict: E2E) -> None:
    """Invariant: a restarted controller plans nothing before its first poll, so a rollout whose KDApp KubeDirector
    refuses stays on its attempt (Upgrading to 2.0.0) across restarts instead of flipping to Idle at 1.0.0."""
    strict.start_controller()
    strict.wait_ready_at("1.0.0")
    strict.wait_settled()
    strict.commit({"apps/hello.yaml": strict.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    wait_for("ApplyFailed event on KDApp hello", lambda: _apply_failed(strict), 60)
    attempt = (strict.rollout() or {})["status"]["attempt"]
    for _ in range(2):
        strict.stop_controller()
        logged = len(strict.log)
        controller = strict.start_controller()
        wait_for("a plan after the restart", lambda c=controller: c.last_plan, 30)  # type: ignore[misc]
        wait_for("the KDApp applied (and refused) again",
                 lambda n=logged: "apply KubeDirectorApp default/hello at version 2.0.0" in strict.log[n:], 60)
        assert strict.log[logged:] == ["apply KubeDirectorApp default/hello at version 2.0.0"], strict.log[logged:]
        status = (strict.rollout() or {})["status"]
        assert (status["phase"], status["targetVersion"], status["attempt"]) == ("Upgrading", "2.0.0", attempt)


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
    (the accepted 2.0.0 one, whose KDApp KubeDirector refuses), never the older applied commit loaded at start;
    so the rollout keeps its attempt whatever the timing of the per-key workers."""
    strict.start_controller()
    strict.wait_ready_at("1.0.0")
    strict.wait_settled()
    assert strict.controller is not None
    applied = strict.controller.source.applied_commit
    head = strict.commit({"apps/hello.yaml": strict.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    assert applied not in (None, head)
    wait_for("ApplyFailed event on KDApp hello", lambda: _apply_failed(strict), 60)
    attempt = (strict.rollout() or {})["status"]["attempt"]
    strict.stop_controller()
    planner = FleetHeldForParts(hold=3.0)
    source = GitSource(f"file://{strict.repo}", "main", strict.tmp / "source-cache", default_namespace=NS)
    assert source.applied_commit == applied  # the refused KDApp kept 2.0.0 from being marked applied
    logged = len(strict.log)
    strict.controller = Controller(source, strict.cluster.api_client(), namespace=NS, poll_interval=0.5,
                                   planner=planner, workers=3, on_action=lambda a, o: strict.log.append(a.describe()))
    strict.controller.start()
    wait_for("the KDApp applied (and refused) again",
             lambda: "apply KubeDirectorApp default/hello at version 2.0.0" in strict.log[logged:], 60)
    assert strict.log[logged:] == ["apply KubeDirectorApp default/hello at version 2.0.0"], strict.log[logged:]
    with planner.lock:
        commits = list(planner.part_commits)
    assert commits and set(commits) == {head}, f"parts planned {commits}; the applied commit was {applied}"
    status = (strict.rollout() or {})["status"]
    assert (status["phase"], status["targetVersion"], status.get("attempt")) == ("Upgrading", "2.0.0", attempt)
