"""HA on both backends: two `gitops-kd run --leader-elect` replicas as the gitops-kd ServiceAccount; the leader is
SIGKILLed mid-upgrade, the standby takes the Lease within the lease duration and finishes, and no step ever runs
twice (each member's hook once, each member replaced once, never two members down)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitops_kd.constants import LEASE_DURATION
from gitops_kd.kube.leader import JITTER_FACTOR
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E
from tests.ha.podwatch import DownTimeline
from tests.ha.test_failover import RETRY_PERIOD, app_with_appending_hook, events, leader_of, lease_time
from tests.scenarios.runs import clean_system_namespace, start_run

pytestmark = pytest.mark.backends


def test_leader_killed_mid_upgrade_standby_finishes_without_repeating_a_step(world: E2E, tmp_path: Path) -> None:
    clean_system_namespace(world)
    procs: list[RunProcess] = []
    watch: DownTimeline | None = None
    try:
        procs += [start_run(world, tmp_path, name, "--leader-elect") for name in ("replica-a", "replica-b")]
        leader = wait_for("a leader", lambda: leader_of(world, procs), 60)
        standby = next(p for p in procs if p is not leader)
        world.wait_ready_at("1.0.0", timeout=180)
        assert standby.get("/healthz")[0] == 200, "the standby is alive (liveness) while not leading"

        watch = DownTimeline(world.rest, "hello-dev", expected=3, ns=world.ns)
        world.commit({"apps/hello.yaml": app_with_appending_hook()}, "hello 2.0.0, appending hook")
        leader.poll_now()
        # Mid-upgrade: the first member is replaced, hooked and gated; the second one is being replaced.
        wait_for("second member deleted", lambda: len(watch.deleted) >= 2, 180)
        assert len(events(world, "HookSucceeded")) == 1
        leader.kill()
        last_renew = lease_time(world, "renewTime")  # the dead leader's last renewal: its lease runs from here
        wait_for(
            "standby takes the Lease",
            lambda: leader_of(world, procs) is standby,
            LEASE_DURATION + 3 * RETRY_PERIOD + 5,
            interval=0.1,
        )
        # Not sooner than a lease duration after the last renewal (two leaders), at the latest one jittered retry
        # period to notice that renewal plus one to notice the expiry (client-go's rule); the electors' own
        # timestamps, so load on the test process does not skew the measure.
        took_over = (lease_time(world, "acquireTime") - last_renew).total_seconds()
        latest = LEASE_DURATION + 2 * RETRY_PERIOD * (1 + JITTER_FACTOR) + 0.5
        assert LEASE_DURATION - 0.5 <= took_over <= latest, (
            f"standby acquired the Lease {took_over:.1f}s after the last renewal (bound {latest:.1f}s)"
        )

        world.wait_ready_at("2.0.0", timeout=240)
        pods = sorted(p["metadata"]["name"] for p in world.pods())
        assert len(pods) == 3
        for pod in pods:  # each member ran the hook exactly once: one line in its log, one HookSucceeded Event
            lines = world.sh(pod, "cat /var/lib/hello/upgrade.log").splitlines()
            assert lines == [f"upgraded-to-2.0.0 {pod}"], (pod, lines)
        hooked = [e["message"] for e in events(world, "HookSucceeded")]
        assert len(hooked) == 3, hooked
        for pod in pods:
            assert sum(pod in m for m in hooked) == 1, (pod, hooked)
        # every member replaced once, never two down at once
        assert sorted(watch.deleted) == pods, watch.deleted
        assert watch.max_down <= 1, watch.timeline
        ro = world.rollout()
        assert ro is not None and ro["status"]["phase"] == "Idle"
        assert standby.alive and standby.get("/readyz")[0] == 200
    finally:
        if watch is not None:
            watch.stop()
        for p in procs:
            p.stop()
