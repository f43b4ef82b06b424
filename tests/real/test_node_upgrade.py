"""The live upgrade on a real node (--backend=kd-node|node): every member called through its Service's target
while the rollout runs and while it is halted; the persisted files read from the node's own folders after the
upgrade, the revert and the revert of the revert. Figures (unreachable windows, replacement times) are printed
(pytest -s) for docs/real-node.md."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.testing import wait_for
from tests.e2e.harness import E2E, git, hello_app
from tests.real.nodeagent import volume_folder
from tests.real.nodesession import NodeBackend
from tests.real.traffic import TrafficProbe
from tests.scenarios.test_hello import at_1_0_0, upgrade_to_2_0_0

pytestmark = pytest.mark.node
HALT_WATCH = 20.0  # seconds the halted rollout is watched


def probe(world: E2E, node: NodeBackend) -> TrafficProbe:
    assert node.node.net is not None
    return TrafficProbe(world.rest, world.ns, "hello-dev", node.node.net.path)


def report(title: str, traffic: TrafficProbe) -> None:
    for name, member in sorted(traffic.members.items()):
        replaced = ", ".join(f"{end - start:.1f}s" for start, end in member.replaced) or "-"
        longest = traffic.longest_window(name)
        print(f"{title}: {name}: longest unreachable {longest:.1f}s, replaced in {replaced}, {member.answered} answers")


def member_files(world: E2E, node: NodeBackend, pod: str) -> Path:
    """The node folder of ``pod``'s claim (the PersistentVolume the agent made for it)."""
    pod_obj = world.rest.get("v1", "pods", world.ns, pod)
    claims = [
        v["persistentVolumeClaim"]["claimName"] for v in pod_obj["spec"].get("volumes") or [] if v.get("persistentVolumeClaim")
    ]
    assert len(claims) == 1, pod_obj["spec"].get("volumes")
    return volume_folder(node.node.storage, world.rest.get("v1", "persistentvolumeclaims", world.ns, claims[0]))


def read(folder: Path, rel: str) -> str | None:
    """A file of a persisted directory on the node: KubeDirector mounts each one from the claim at its own path
    (subPath ``var/lib/hello`` etc.), so ``/var/lib/hello/x`` is ``FOLDER/var/lib/hello/x``."""
    path = folder / rel
    return path.read_text() if path.is_file() else None


def test_upgrade_keeps_each_member_reachable_but_while_its_own_pod_is_replaced(node_world: E2E, node_joined: NodeBackend) -> None:
    """Invariant: during the upgrade a member is unreachable (pod IP, Service targetPort) only while its own pod is
    replaced; the files the data rules keep, migrate and discard are so in the node's own folders, and after the
    revert and the revert of the revert."""
    world = node_world
    began = time.monotonic()
    pods = at_1_0_0(world)
    deployed = time.monotonic()
    with probe(world, node_joined) as traffic:
        upgrade_to_2_0_0(world)
        upgraded = time.monotonic()
        world.wait_settled(timeout=120)
    start = node_joined.node.start_seconds
    print(f"figures: node start {start:.1f}s, first deploy {deployed - began:.1f}s, upgrade {upgraded - deployed:.1f}s")
    report("upgrade", traffic)
    assert traffic.members, "no member with a Service port was called"
    for name in traffic.members:
        assert traffic.members[name].replaced, f"{name}: its replacement was not seen"
        assert traffic.outside_replacement(name) == [], f"{name} unreachable outside its own replacement"
    folders = {pod: member_files(world, node_joined, pod) for pod in pods}
    for pod, folder in folders.items():
        assert read(folder, "var/lib/hello/user.txt") == "written-at-1.0.0\n", pod
        assert read(folder, "var/lib/hello/schema-version") == "2\n", pod
        assert read(folder, "var/lib/hello/upgrade.log") == "upgraded-to-2.0.0\n", pod
        assert read(folder, "opt/hello/cache/index") == "cache-2.0.0\n", pod
    for pod in pods:
        world.sh(pod, "echo written-at-2.0.0 > /var/lib/hello/user.txt")
    git(world.repo, "revert", "--no-edit", "HEAD")
    assert world.controller is not None
    world.controller.trigger_poll()
    world.wait_ready_at("1.0.0", timeout=240)
    world.wait_settled(timeout=120)
    for pod, folder in folders.items():
        assert read(folder, "var/lib/hello/user.txt") == "written-at-1.0.0\n", pod  # restore
        assert read(folder, "var/lib/hello/new-in-2") is None, pod
    git(world.repo, "revert", "--no-edit", "HEAD")
    world.controller.trigger_poll()
    world.wait_ready_at("2.0.0", timeout=240)
    world.wait_settled(timeout=120)
    for pod, folder in folders.items():
        assert read(folder, "var/lib/hello/new-in-2") == "yes\n", pod
        assert read(folder, "var/lib/hello/upgrade.log") == "upgraded-to-2.0.0\n", pod


def failing_hook() -> dict[str, Any]:
    return {
        "roleOrder": ["controller", "worker"],
        "from": [{"versions": ">=1.0.0 <2.0.0", "default": "keep"}],
        "downgrade": {"to": [{"versions": ">=1.0.0 <2.0.0", "default": "keep"}]},
        "hooks": {"postUpgrade": {"command": ["/bin/sh", "-c", "echo broken >&2; exit 3"], "timeoutSeconds": 30}},
        "failurePolicy": "halt",
    }


def test_a_halted_rollout_leaves_every_member_not_replaced_reachable(node_world: E2E, node_joined: NodeBackend) -> None:
    """Invariant: while a rollout is halted (the controller upgraded, its hook failed) every worker still runs
    1.0.0 and answers at its pod IP and its Service's targetPort, the whole time."""
    world = node_world
    at_1_0_0(world)
    with probe(world, node_joined) as traffic:
        world.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=failing_hook())}, "a broken hook")
        wait_for("the rollout halted", lambda: ((world.rollout() or {}).get("status") or {}).get("failure"), 240)
        halted_at = time.monotonic()
        time.sleep(HALT_WATCH)  # the window watched: the halt is a state that lasts, traffic is sampled meanwhile
    report("halted", traffic)
    workers = [name for name, m in traffic.members.items() if not m.replaced and m.replacing_since is None]
    assert workers, f"no member left un-replaced by the halt: {sorted(traffic.members)}"
    for name in workers:
        during = [(s, e) for s, e in traffic.members[name].windows if e >= halted_at]
        assert during == [], f"{name} (not replaced) unreachable during the halt: {during}"
