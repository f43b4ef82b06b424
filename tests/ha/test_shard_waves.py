"""Sharding keeps the wave rule across shards (issue 31): the wave gate of a cluster reads the lower-wave clusters
of other shards from the cluster (the informers), not from the memory of the replica that upgraded them."""

from __future__ import annotations

import time
from pathlib import Path

from gitops_kd.plan.waves import WAITING_PREFIX
from gitops_kd.testing import wait_for
from tests.e2e.harness import E2E, hello_app
from tests.ha.podwatch import DownTimeline
from tests.ha.test_autoshard import SHARDS, holders, replica
from tests.safety.shardmatrix import cluster_for

SOAK = 4.0  # --wave-soak: seconds wave 0 must have been Ready at the target before wave 1 starts
POLL = 0.05
TIMESTAMP = 1.0  # a Kubernetes condition time's resolution (seconds)


def _ready_at(world: E2E, name: str, version: str) -> bool:
    status = (world.rollout(name) or {}).get("status") or {}
    return status.get("appVersion") == version and any(
        c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or ()
    )


def test_a_later_wave_held_by_another_replica_waits_for_the_earlier_wave_to_soak(tmp_path: Path) -> None:
    """Invariant: no wave rule broken across shards. The wave-0 cluster's shard is held by replica-a, the wave-1
    cluster's by replica-b; after an upgrade commit, wave 1's KDRollout (written by replica-b) says it waits for the
    wave-0 cluster, and no wave-1 pod goes down before the wave-0 cluster is Ready at the target, as the API server
    shows it, and has soaked --wave-soak seconds."""
    world = E2E(tmp_path / "world")
    world.rest.create(
        "v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gitops-kd-system"}}
    )
    world.commit({"clusters/hello-dev.yaml": None}, "no cluster yet: the clusters follow the shards")
    soak = ("--wave-soak", str(SOAK))
    procs = [replica(world, tmp_path, "replica-a", extra=soak)]
    try:
        wait_for(
            "replica-a holds every shard",
            lambda: set(holders(world).values()) == {"replica-a"} and len(holders(world)) == SHARDS,
            60,
            0.1,
        )
        procs.append(replica(world, tmp_path, "replica-b", extra=soak))

        def balanced() -> dict[int, str] | None:
            held = holders(world)
            return held if sorted(held.values()) == ["replica-a", "replica-a", "replica-b", "replica-b"] else None

        now = wait_for("two shards each", balanced, 60, 0.1)
        first = cluster_for(world, "replica-a", now, set())
        second = cluster_for(world, "replica-b", now, {first})
        base = world.template("clusters/hello-dev.yaml").replace("members: 2", "members: 1")
        world.commit(
            {
                f"clusters/{first}.yaml": base.replace("name: hello-dev", f"name: {first}", 1),
                f"clusters/{second}.yaml": base.replace("name: hello-dev", f"name: {second}", 1).replace(
                    'gitops-kd.io/wave: "0"', 'gitops-kd.io/wave: "1"'
                ),
            },
            "wave 0 on a, wave 1 on b",
        )
        for name in (first, second):
            world.wait_ready_at("1.0.0", name=name, timeout=180)
        assert holders(world) == now  # the waves are held by different replicas throughout

        later = DownTimeline(world.rest, second, 2)  # wave 1's pod deletions, from the API server's watch
        world.commit({"apps/hello.yaml": hello_app("2.0.0")}, "hello 2.0.0")
        ready_seen: float | None = None
        waited = False
        deadline = time.monotonic() + 240
        while not _ready_at(world, second, "2.0.0"):
            assert time.monotonic() < deadline, "wave 1 not Ready at 2.0.0"
            if ready_seen is None and _ready_at(world, first, "2.0.0"):
                ready_seen = time.monotonic()
            step = ((world.rollout(second) or {}).get("status") or {}).get("step") or ""
            if step.startswith(WAITING_PREFIX) and first in step:
                waited = True  # replica-b's KDRollout of wave 1 says it waits for replica-a's wave 0
            time.sleep(POLL)
        later.stop()
        assert waited and ready_seen is not None and later.timeline, (waited, ready_seen, later.timeline)
        down = next(t for t, count, _event in later.timeline if count > 0)  # wave 1's first pod down
        # ... at least SOAK after wave 0 was seen Ready at the target, less TIMESTAMP (the Ready condition's
        # lastTransitionTime, which the soak counts from, is in whole seconds, rounded down) and the polling's lag
        assert down - ready_seen >= SOAK - TIMESTAMP - 0.5, (down - ready_seen, later.timeline)
        assert sorted(set(later.deleted)) == sorted(later.deleted) and len(later.deleted) == 2, later.deleted
        assert holders(world) == now
    finally:
        for proc in procs:
            proc.stop()
        world.close()
