"""The runtime's drift wiring: drift Events are fenced by the controller they are attached to."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gitops_kd.controller.drift import DriftWiring, drift_wiring
from gitops_kd.controller.runtime import Manager
from gitops_kd.testing import wait_for
from tests.e2e.harness import E2E


def _drift_events(world: E2E) -> list[dict[str, Any]]:
    return [e for e in world.rest.list("v1", "events", world.ns)["items"] if e["reason"] == "DriftDetected"]


def _plan_until_drift(wiring: DriftWiring, controller: Manager) -> None:
    """Plan (through the drift guard) from the controller's desired state and informers until a drift is open."""
    desired = controller.desired
    assert desired is not None

    def drifted() -> bool:
        wiring.planner(desired, controller.collector.snapshot(), now=datetime.now(UTC))
        return bool(wiring.guard.active)

    wait_for("the drift guard sees the edit", drifted, 60)


def test_drift_events_of_a_replica_whose_fence_is_down_are_not_sent(tmp_path: Path) -> None:
    """Invariant: a replica that may not act (a deposed or frozen leader: its fence is down) sends no drift Event
    when its planning detects a drift; the same detection with the fence up sends DriftDetected."""
    world = E2E(tmp_path)
    try:
        controller = world.start_controller()
        world.wait_ready_at("1.0.0")
        wait_for("the controller in sync", lambda: controller.last_plan is not None and controller.last_plan.empty, 60)
        controller.set_fence(lambda: False)  # the controller acts no more (nor reverts the edit below)
        fenced, unfenced = drift_wiring(world.backend.api_client()), drift_wiring(world.backend.api_client())
        fenced.attach(controller)
        for wiring in (fenced, unfenced):  # the in-sync baseline, before the edit
            wiring.planner(controller.desired, controller.collector.snapshot(), now=datetime.now(UTC))
        sts = next(
            s
            for s in world.rest.list("apps/v1", "statefulsets", world.ns)["items"]
            if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
        )
        edit = world.kubectl("set", "image", f"statefulset/{sts['metadata']['name']}", "app=gitops-kd/hello:6.6.6")
        assert edit.returncode == 0, edit.stderr
        _plan_until_drift(fenced, controller)
        assert not _drift_events(world)
        _plan_until_drift(unfenced, controller)  # not vacuous: the same detection, unfenced, is an Event
        wait_for("DriftDetected sent", lambda: _drift_events(world), 30)
    finally:
        world.close()
