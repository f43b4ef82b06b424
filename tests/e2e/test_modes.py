"""The reconcile mode is configuration (Options.per_key), not a property of the planner's signature."""

from __future__ import annotations

from gitops_kd.kd.layout import KDAPP_PLURAL, KDCLUSTER_PLURAL
from gitops_kd.plan.actions import ApplyCluster
from gitops_kd.plan.focus import cluster_key
from gitops_kd.testing import wait_for
from tests.e2e.harness import E2E, KD, hello_app
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
    wait_for("a part planned in the default (per-key) mode", lambda: any(partial for partial, _ in list(recording.calls)), 60)


def test_a_key_the_instance_does_not_own_is_never_acted_on(e2e: E2E) -> None:
    """Invariant (the sharding seam, build_manager's ``owns``): a KDCluster key this instance does not own is
    never reconciled, not even the create its fleet plan asks for, while the keys it owns are (the KDApp is
    applied); without the predicate the same commit deploys the cluster."""
    theirs = cluster_key((e2e.ns, "hello-dev"))
    controller = e2e.start_controller(owns=lambda work: work != theirs)
    wait_for("the KDApp applied by its (owned) key", lambda: e2e.rest.get_or_none(KD, KDAPP_PLURAL, e2e.ns, "hello"), 60)
    wait_for(
        "a fleet plan that asks for the KDCluster",
        lambda: (p := controller.last_plan) is not None and any(isinstance(a, ApplyCluster) for a in p.actions),
        60,
    )
    for i in range(3):
        before = controller.last_plan
        controller.kick()
        wait_for(f"fleet round {i + 1}", lambda seen=before: controller.last_plan is not seen, 30)
    assert e2e.rest.get_or_none(KD, KDCLUSTER_PLURAL, e2e.ns, "hello-dev") is None
    assert not [line for line in e2e.log if "hello-dev" in line], e2e.log
    e2e.stop_controller()

    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
