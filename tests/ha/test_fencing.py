"""HA fencing: a leader frozen past its lease (SIGSTOP) while a standby takes over acts no more once it thaws."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E
from tests.ha.test_failover import (
    LEASE_DURATION,
    RETRY_PERIOD,
    app_with_appending_hook,
    events,
    leader_of,
    start_replicas,
)

ACTION_LINE = re.compile(r"gitops_kd\.execute\.executor.* -> ")


def test_leader_frozen_past_its_lease_writes_and_execs_nothing_after_thawing(tmp_path: Path) -> None:
    """Invariant: once another replica holds the Lease, the deposed leader starts no further write or exec when it
    thaws (its fence, checked right before each, is down): at most the one action it was frozen in the middle
    of completes (its request may already be on its way; a stale KDRollout write fails on the resourceVersion
    precondition), and the fence refuses what comes after; each member's hook runs exactly once."""
    world = E2E(tmp_path)
    procs: list[RunProcess] = []
    try:
        start_replicas(world, tmp_path, procs, "--log-level", "info")
        leader = wait_for("a leader", lambda: leader_of(world, procs), 60)
        standby = next(p for p in procs if p is not leader)
        world.wait_ready_at("1.0.0", timeout=120)
        world.commit({"apps/hello.yaml": app_with_appending_hook()}, "hello 2.0.0, appending hook")
        leader.poll_now()
        wait_for("the first hook ran", lambda: len(events(world, "HookSucceeded")) >= 1, 120)
        os.kill(leader.proc.pid, signal.SIGSTOP)
        try:
            wait_for("standby takes the Lease", lambda: leader_of(world, procs) is standby,
                     2 * LEASE_DURATION + 3 * RETRY_PERIOD + 30, interval=0.1)  # timing bounds: test_failover
            took_over = time.monotonic()
            # let the standby make progress with the old leader still frozen, so it is deposed for real
            wait_for("the standby acts", lambda: ACTION_LINE.search(standby.log()), 60)
            frozen_log = len(leader.log())
        finally:
            os.kill(leader.proc.pid, signal.SIGCONT)
        wait_for("the deposed leader exits", lambda: not leader.alive, 60)
        after = leader.log()[frozen_log:]
        assert len(ACTION_LINE.findall(after)) <= 1, f"deposed leader acted after thawing:\n{after}"
        assert time.monotonic() > took_over
        world.wait_ready_at("2.0.0", timeout=180)
        for pod in sorted(p["metadata"]["name"] for p in world.pods()):
            lines = world.sh(pod, "cat /var/lib/hello/upgrade.log").splitlines()
            assert lines == [f"upgraded-to-2.0.0 {pod}"], (pod, lines)
        assert len(events(world, "HookSucceeded")) == 3
    finally:
        for p in procs:
            if p.alive:
                os.kill(p.proc.pid, signal.SIGCONT)
            p.stop()
        world.close()
