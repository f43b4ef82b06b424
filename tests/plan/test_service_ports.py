"""Each member's Service moves with its own pod (issues 40 and 42): whole rollouts run through the planner on the
model of the cluster (tests/plan/kdworld.py), hello 1.0.0 -> 2.0.0 moving the worker endpoint 8080 -> 8081.
Invariant checked after every executed action: no running (not deleting) member pod's own Service targets ports
other than the ones its app container listens on (plan/reach.unreachable is empty)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gitops_kd.plan import actions as A
from gitops_kd.plan import plan
from gitops_kd.plan.reach import unreachable
from gitops_kd.rollout.model import Unreachable
from tests.plan.kdworld import HELLO1, HELLO2, HELLO_DEV, NS, FakeCluster, desired, live_cluster, observed

KEY = (NS, "hello-dev")
WORKER_SERVICES = ("s-kdss-worker-0", "s-kdss-worker-1")


def run(world: FakeCluster, want: Any, stop: Callable[[A.Action], bool] = lambda a: False) -> list[A.Action]:
    """Execute the plan's next action until steady (or ``stop`` says so), checking the invariant after each."""
    done: list[A.Action] = []
    for _ in range(400):
        p = plan(want, world.state, now=world.now)
        assert not p.refusals, p.describe()
        action = p.next()
        if action is None or stop(action):
            return done
        world.apply(action)
        done.append(action)
        assert unreachable(world.cluster(KEY)) == (), f"after {action.describe()}: {unreachable(world.cluster(KEY))}"
    raise AssertionError("no steady state:\n" + "\n".join(world.log[-20:]))


def moves(done: list[A.Action]) -> list[str]:
    """The pod deletions and Service port patches, in the order executed."""
    return [
        f"delete {a.pod}" if isinstance(a, A.DeletePod) else f"ports {a.service} {[p['port'] for p in a.ports]}"
        for a in done
        if isinstance(a, (A.DeletePod, A.PatchServicePorts))
    ]


def ports(world: FakeCluster) -> dict[str, list[int]]:
    return {s.name: [int(p["port"]) for p in s.ports] for s in world.cluster(KEY).member_services()}


def upgraded() -> FakeCluster:
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)))
    run(world, desired(HELLO2, HELLO_DEV))
    return world


def test_the_first_plan_of_an_upgrade_changes_no_service_before_its_pod() -> None:
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)))
    first = plan(desired(HELLO2, HELLO_DEV), world.state, now=world.now)
    assert not [a for a in first.actions if isinstance(a, A.PatchServicePorts)], first.describe()


def test_an_upgrade_moves_each_member_service_right_after_its_own_pod_goes() -> None:
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)))
    done = run(world, desired(HELLO2, HELLO_DEV))
    assert moves(done) == [
        "delete kdss-controller-0",  # the controller role exposes no port: no Service
        "delete kdss-worker-1",
        "ports s-kdss-worker-1 [8081]",
        "delete kdss-worker-0",
        "ports s-kdss-worker-0 [8081]",
    ]
    assert ports(world) == {s: [8081] for s in WORKER_SERVICES}
    assert world.cluster(KEY).rollout.phase == "Idle"


def test_a_revert_moves_them_back_one_by_one_and_the_revert_of_the_revert_again() -> None:
    world = upgraded()
    back = run(world, desired(HELLO1, HELLO_DEV, commit="revert"))
    assert moves(back)[-4:] == [
        "delete kdss-worker-1",
        "ports s-kdss-worker-1 [8080]",
        "delete kdss-worker-0",
        "ports s-kdss-worker-0 [8080]",
    ]
    assert ports(world) == {s: [8080] for s in WORKER_SERVICES}
    again = run(world, desired(HELLO2, HELLO_DEV, commit="revert-of-revert"))
    assert moves(again)[-4:] == [
        "delete kdss-worker-1",
        "ports s-kdss-worker-1 [8081]",
        "delete kdss-worker-0",
        "ports s-kdss-worker-0 [8081]",
    ]
    assert ports(world) == {s: [8081] for s in WORKER_SERVICES}


def test_a_halted_rollout_leaves_the_members_not_replaced_on_their_old_ports_and_a_revert_moves_only_the_moved() -> None:
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)))
    want = desired(HELLO2, HELLO_DEV)
    run(world, want, stop=lambda a: isinstance(a, A.DeletePod) and a.pod == "kdss-worker-0")
    world.apply(A.Stall(NS, "hello-dev", "StepFailed", "a migration failed on kdss-worker-1"))
    halted = plan(want, world.state, now=world.now)
    assert not [a for a in halted.actions if isinstance(a, A.PatchServicePorts)], halted.describe()
    assert ports(world) == {"s-kdss-worker-0": [8080], "s-kdss-worker-1": [8081]}
    assert unreachable(world.cluster(KEY)) == ()
    back = run(world, desired(HELLO1, HELLO_DEV, commit="revert"))
    assert [m for m in moves(back) if m.startswith("ports")] == ["ports s-kdss-worker-1 [8080]"]
    assert ports(world) == {s: [8080] for s in WORKER_SERVICES}


def test_a_member_service_edited_away_from_its_pods_ports_is_recorded_unreachable_until_reverted() -> None:
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)))
    c = world.cluster(KEY)
    edited = tuple(
        replace(s, ports=({"name": "http-hello-http", "port": 9999},)) if s.name == "s-kdss-worker-0" else s for s in c.services
    )
    world.put(replace(c, services=edited))
    want = desired(HELLO1, HELLO_DEV)
    first = plan(want, world.state, now=world.now)
    record = next(a for a in first.actions if isinstance(a, A.RecordUnreachable))
    assert record.members == (Unreachable("kdss-worker-0", "s-kdss-worker-0", (9999,), (8080,)),)
    assert "kdss-worker-0: Service s-kdss-worker-0 targets port(s) 9999 but the pod listens on 8080" in first.describe()
    world.apply(record)
    assert world.cluster(KEY).rollout.recorded.unreachable == record.members
    again = plan(want, world.state, now=world.now)
    assert not [a for a in again.actions if isinstance(a, A.RecordUnreachable)]  # written once, not every round
    revert = next(a for a in again.actions if isinstance(a, A.PatchServicePorts))
    world.apply(revert)
    clear = plan(want, world.state, now=world.now).next()
    assert isinstance(clear, A.RecordUnreachable) and clear.members == ()
    world.apply(clear)
    assert plan(want, world.state, now=world.now).empty


def test_no_service_moves_while_its_statefulset_has_not_observed_the_new_template() -> None:
    """Before the StatefulSet controller observes a patched template its update revision is still the previous
    one: a pod at it looks replaced but runs the version its Service targets (seen on the embedded cluster in a
    revert: the member's Service went back to 8080 while its pod still served 8081)."""
    world = upgraded()
    back = desired(HELLO1, HELLO_DEV, commit="revert")
    run(world, back, stop=lambda a: isinstance(a, A.PatchTemplate) and a.role == "worker")
    c = world.cluster(KEY)
    before = c.statefulsets["worker"]
    world.apply(plan(back, world.state, now=world.now).next())  # PatchTemplate of the worker role
    c = world.cluster(KEY)
    lagging = replace(c.statefulsets["worker"], observed_generation=before.generation, update_revision=before.update_revision)
    world.put(replace(c, statefulsets={**c.statefulsets, "worker": lagging}))
    p = plan(back, world.state, now=world.now)
    assert not [a for a in p.actions if isinstance(a, A.PatchServicePorts)], p.describe()
