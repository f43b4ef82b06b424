"""The reconcile mode is configuration (Options.per_key), not a property of the planner's signature."""

from __future__ import annotations

from gitops_kd.testing import wait_for
from tests.e2e.harness import E2E, hello_app
from tests.e2e.test_per_key import Recording


def test_fleet_mode_is_chosen_by_options_even_with_a_planner_that_plans_parts(e2e: E2E) -> None:
    """Invariant: Options.per_key=False runs fleet mode (one key, one worker, whole-fleet plans only) whatever the
    planner accepts, and a live upgrade completes in it; the same planner with the default options plans parts."""
    recording = Recording()  # takes partial=: the controller used to choose per-key mode from that
    controller = e2e.start_controller(planner=recording, per_key=False, workers=3)
    assert not controller.per_key and controller.workers == 1
    e2e.wait_ready_at("1.0.0")
    e2e.commit({"apps/hello.yaml": hello_app("2.0.0")}, "hello 2.0.0")
    e2e.wait_ready_at("2.0.0")
    calls = recording.take()
    assert calls and not any(partial for partial, _ in calls), "fleet mode planned a part"
    e2e.stop_controller()

    controller = e2e.start_controller(planner=recording)
    assert controller.per_key
    wait_for("a part planned in the default (per-key) mode",
             lambda: any(partial for partial, _ in list(recording.calls)), 60)
