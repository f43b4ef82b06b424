"""Each member's Service moves with its own pod (issues 40 and 42), on every backend: hello 1.0.0 -> 2.0.0 moves the
worker endpoint 8080 -> 8081. An upgrade halted by a migration that fails on a later member leaves the members not
replaced on their old ports; `git revert` moves the replaced ones back; a completed upgrade moves them all.
Invariant watched throughout (tests/scenarios/reach.py): no running, Ready member pod's own Service targets ports
other than the ones that pod declares, and the KDRollout's status.unreachable names none."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gitops_kd.testing import pod_ready
from tests.e2e.harness import E2E, git, wait_for
from tests.scenarios.reach import ReachWatch, member_service_ports

pytestmark = pytest.mark.backends
ROLE_LABEL = "kubedirector.hpe.com/role"
MARKER = "/var/lib/hello/fail-migration"  # in the 1.0.0 data of one member: the 2.0.0 migration refuses it
OLD_COPY = "/var/lib/gitops-kd/old/var/lib/hello"  # where the migration finds the 1.0.0 copy (docs/upgrade-stanza.md)


def three_workers(world: E2E) -> str:
    cluster = (world.repo / "clusters" / "hello-dev.yaml").read_text()
    worker = cluster.index("- id: worker")
    grown = cluster[:worker] + cluster[worker:].replace("members: 2", "members: 3", 1)
    assert grown != cluster
    return grown


def failing_on_marker(world: E2E) -> str:
    """hello 2.0.0 whose migration exits 1 in a member whose 1.0.0 data holds MARKER (the others migrate)."""
    app = world.template("examples/hello-2.0.0.yaml")
    copy = "- cp -a /var/lib/gitops-kd/old/var/lib/hello/. /var/lib/hello/"
    assert copy in app
    return app.replace(copy, f"- test ! -e {OLD_COPY}/fail-migration && cp -a {OLD_COPY}/. /var/lib/hello/", 1)


def workers(world: E2E) -> list[str]:
    """The worker pods, highest ordinal first: the order they are replaced in."""
    names = [p["metadata"]["name"] for p in world.pods() if p["metadata"]["labels"][ROLE_LABEL] == "worker"]
    return sorted(names, key=lambda n: -int(re.sub(r".*-", "", n)))


def status(world: E2E) -> dict[str, Any]:
    return (world.rollout() or {}).get("status") or {}


def settled(world: E2E, pods: int) -> None:
    def probe() -> bool:
        plan = world.controller.last_plan if world.controller is not None else None
        found = world.pods()
        return plan is not None and plan.empty and len(found) == pods and all(pod_ready(p) for p in found)

    wait_for(f"controller settled with {pods} pods Ready", probe, 180)


def test_a_halted_upgrade_keeps_unreplaced_members_reachable_a_revert_and_a_full_upgrade_move_them(world: E2E) -> None:
    world.commit({"clusters/hello-dev.yaml": three_workers(world)}, "hello-dev: three workers")
    world.start_controller()
    world.wait_ready_at("1.0.0", timeout=240)
    settled(world, 4)
    first, failing, last = workers(world)
    assert member_service_ports(world.rest, world.ns, "hello-dev") == {first: [8080], failing: [8080], last: [8080]}
    world.sh(failing, f"echo refuse > {MARKER}")

    watch = ReachWatch(world.rest, world.ns, "hello-dev")
    bad = world.commit({"apps/hello.yaml": failing_on_marker(world)}, "hello 2.0.0, a migration failing on one member")
    halted = wait_for(
        "the rollout halted by the failed migration", lambda: status(world).get("stalledReason") == "StepFailed", 300
    )
    assert halted
    wait_for("the failing member Ready again on 2.0.0", lambda: all(pod_ready(p) for p in world.pods()), 120)
    # the first worker was replaced, the second was replaced and its migration failed, the last was never touched
    assert member_service_ports(world.rest, world.ns, "hello-dev") == {first: [8081], failing: [8081], last: [8080]}
    images = {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in world.pods()}
    assert (images[first], images[failing], images[last]) == ("gitops-kd/hello:2.0.0",) * 2 + ("gitops-kd/hello:1.0.0",)
    assert not status(world).get("unreachable"), status(world)
    assert watch.stop() == {}

    watch = ReachWatch(world.rest, world.ns, "hello-dev")
    git(world.repo, "revert", "--no-edit", bad)
    assert world.controller is not None
    world.controller.trigger_poll()
    world.wait_ready_at("1.0.0", timeout=300)
    settled(world, 4)
    assert member_service_ports(world.rest, world.ns, "hello-dev") == {first: [8080], failing: [8080], last: [8080]}
    assert not status(world).get("unreachable"), status(world)
    assert watch.stop() == {}

    watch = ReachWatch(world.rest, world.ns, "hello-dev")
    world.commit({"apps/hello.yaml": world.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    world.wait_ready_at("2.0.0", timeout=300)
    settled(world, 4)
    assert member_service_ports(world.rest, world.ns, "hello-dev") == {first: [8081], failing: [8081], last: [8081]}
    assert not status(world).get("unreachable"), status(world)
    assert watch.stop() == {}
