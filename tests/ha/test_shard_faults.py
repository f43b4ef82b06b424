"""The fault matrix's kill and freeze kinds with 3 sharded replicas (issue 31): mid-upgrade, while one of its writes
hangs at the API server, the replica holding shard 0 (the instance record's writer) is SIGKILLed, or frozen
(SIGSTOP) until the others hold its shards and then thawed. Real processes, one embedded cluster."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from gitops_kd.plan.focus import cluster_key
from gitops_kd.plan.shard import shard_of
from gitops_kd.testing import wait_for
from kdsim.apiserver.faults import WRITE
from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E, NS
from tests.ha.podwatch import DownTimeline
from tests.ha.test_autoshard import DURATION, holders, replica
from tests.ha.test_failover import SYSTEM_NS, app_with_appending_hook, token_of

SHARDS = 3
HANG = 30.0  # seconds the victim's in-flight write hangs at the API server (ends after the takeover)


def one_cluster_per_shard() -> dict[int, str]:
    names: dict[int, str] = {shard_of(cluster_key((NS, "hello-dev")), SHARDS): "hello-dev"}
    i = 0
    while len(names) < SHARDS:
        names.setdefault(shard_of(cluster_key((NS, f"hello-s{i}")), SHARDS), f"hello-s{i}")
        i += 1
    return names


def hooks_ran(world: E2E, cluster: str) -> int:
    return sum(
        1
        for e in world.rest.list("v1", "events", NS)["items"]
        if e["involvedObject"].get("name") == cluster and e.get("reason") == "HookSucceeded"
    )


@pytest.mark.parametrize("kind", ["kill"])  # freeze, and a sweep of both: tests/safety/test_shard_fault_matrix.py
def test_shard_0_holder_killed_or_frozen_mid_upgrade_costs_one_lease_and_no_step_twice(tmp_path: Path, kind: str) -> None:
    """Invariants: the others hold every shard about one lease duration after the holder of shard 0 is killed or
    frozen with a write in flight; the instance record ends holding the upgrade's commit (written by shard 0's new
    holder); every pod of every cluster is deleted once and runs its postUpgrade hook once (no step twice across
    the takeover, nor after a frozen replica thaws)."""
    world = E2E(tmp_path / "world")
    world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}})
    names = one_cluster_per_shard()
    base = world.template("clusters/hello-dev.yaml")
    world.commit(
        {f"clusters/{n}.yaml": base.replace("name: hello-dev", f"name: {n}", 1) for n in names.values() if n != "hello-dev"},
        "one cluster per shard",
    )
    procs = [replica(world, tmp_path, f"replica-{c}", shards=SHARDS) for c in "abc"]
    victim: RunProcess | None = None
    try:
        for name in names.values():
            world.wait_ready_at("1.0.0", name=name, timeout=180)
        wait_for("a shard each", lambda: sorted(holders(world).values()) == ["replica-a", "replica-b", "replica-c"], 60, 0.1)
        victim = next(p for p in procs if p.name == holders(world)[0])
        watches = {name: DownTimeline(world.rest, name, 3) for name in names.values()}
        head = world.commit({"apps/hello.yaml": app_with_appending_hook()}, "hello 2.0.0, appending hook")
        wait_for(f"{names[0]} upgrading under {victim.name}", lambda: hooks_ran(world, names[0]) >= 1, 120, 0.1)
        world.cluster.faults.add("timeout", WRITE, "!leases", user=token_of(victim.name), delay=HANG)
        wait_for("the victim's next write hangs", lambda: not world.cluster.faults.rules(), 120, 0.05)
        struck = time.monotonic()
        if kind == "kill":
            victim.kill()
        else:
            os.kill(victim.proc.pid, signal.SIGSTOP)
        wait_for(
            "the others hold every shard",
            lambda: victim.name not in holders(world).values() and all(holders(world).values()),
            60,
            0.1,
        )
        took = time.monotonic() - struck
        assert took < DURATION + 4, f"takeover took {took:.1f}s (lease duration {DURATION}s)"
        if kind == "freeze":
            wait_for(
                "a cluster of the victim's shard progresses under its new holder",
                lambda: hooks_ran(world, names[0]) >= 2,
                120,
                0.1,
            )
            os.kill(victim.proc.pid, signal.SIGCONT)
        for name in names.values():
            world.wait_ready_at("2.0.0", name=name, timeout=240)
            watches[name].stop()
            deleted = watches[name].deleted
            assert len(deleted) == len(set(deleted)) == 3, (name, deleted)  # each pod deleted once
            for pod in sorted(p["metadata"]["name"] for p in world.pods(name)):
                lines = world.sh(pod, "cat /var/lib/hello/upgrade.log").splitlines()
                assert lines == [f"upgraded-to-2.0.0 {pod}"], (name, pod, lines)  # its hook ran once
        assert wait_for(
            "the record holds the upgrade's commit",
            lambda: (
                (world.rest.get("gitops-kd.io/v1alpha1", "gitopskdsources", SYSTEM_NS, "gitops-kd").get("status") or {}).get(
                    "lastAppliedRevision"
                )
                == head
            ),
            60,
            0.2,
        )
    finally:
        world.cluster.faults.clear()
        if victim is not None and victim.alive:
            os.kill(victim.proc.pid, signal.SIGCONT)
        for proc in procs:
            proc.stop()
        world.close()
