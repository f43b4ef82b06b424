"""HA fencing: a leader frozen past its lease (SIGSTOP) while a standby takes over acts no more once it thaws,
as the embedded API server sees it: it identifies each replica by its bearer token (tests/ha/test_failover.py)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.status.source import PLURAL
from gitops_kd.testing import wait_for
from kdsim.apiserver.access import AccessEntry
from kdsim.apiserver.faults import WRITE, FaultRule
from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E, git
from tests.ha.test_failover import SYSTEM_NS, app_with_appending_hook, events, leader_of, start_replicas, token_of
from tests.safety.matrix import FREEZE_HANG, LEASE

LEASE_FLAGS = (
    "--lease-duration",
    str(LEASE[0]),
    "--lease-renew-deadline",
    str(LEASE[1]),
    "--lease-retry-period",
    str(LEASE[2]),
)  # the fence is the same code at the default durations
TAKEOVER_TIMEOUT = 90.0
WRITE_OR_EXEC = FaultRule("error", WRITE)  # the embedded server's one definition of "a write or an exec"
RECORD = "gitops-kd"  # the GitOpsKDSource is named after the Lease
IN_FLIGHT_HANG = 2.0  # seconds the frozen leader's last write or exec hangs: it ends while the leader is frozen


def writes_of(world: E2E, proc: RunProcess) -> list[AccessEntry]:
    """Every write and exec the API server received from ``proc`` so far, Lease requests aside (a deposed
    leader's Lease renewal is refused by the Lease's own resourceVersion)."""
    return [
        e
        for e in world.cluster.access_log.entries(token_of(proc.name))
        if e.resource != "leases" and WRITE_OR_EXEC.matches(e.verb, e.rbac_resource)
    ]


def record_status(world: E2E) -> dict[str, Any]:
    obj = world.rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, SYSTEM_NS, RECORD)
    return (obj or {}).get("status") or {}


def block_lease_reads(world: E2E, leader: RunProcess) -> None:
    """The frozen leader's next Lease read hangs at the API server: thawed, its elector does not notice the loss
    for a while, and its other threads (poller, reconcile workers) run on, stopped by nothing but the fence."""
    world.cluster.faults.add("timeout", "get", "leases", user=token_of(leader.name), delay=FREEZE_HANG)


def in_sync_at(world: E2E, commit: str) -> bool:
    """The record says ``commit`` is applied and the cluster in sync with it (Ready): the leader has nothing to do."""
    status = record_status(world)
    return status.get("lastAppliedRevision") == commit and any(
        c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or ()
    )


@dataclass
class Replicas:
    """Two `gitops-kd run --leader-elect` replicas with short leases on one embedded cluster and repo."""

    world: E2E
    procs: list[RunProcess] = field(default_factory=list)

    def leader(self) -> RunProcess:
        return wait_for("a leader", lambda: leader_of(self.world, self.procs), 60)

    def freeze_until_taken_over(self, leader: RunProcess) -> tuple[RunProcess, int]:
        """SIGSTOP ``leader`` and wait until the other replica holds the Lease (the leader stays frozen);
        returns the new leader and how many writes and execs the API server had from the old one by then."""
        standby = next(p for p in self.procs if p is not leader)
        os.kill(leader.proc.pid, signal.SIGSTOP)
        wait_for(
            "the standby takes the Lease", lambda: leader_of(self.world, self.procs) is standby, TAKEOVER_TIMEOUT, interval=0.1
        )
        return standby, len(writes_of(self.world, leader))


@pytest.fixture()
def replicas(tmp_path: Path) -> Iterator[Replicas]:
    pair = Replicas(E2E(tmp_path))
    try:
        start_replicas(pair.world, tmp_path, pair.procs, "--log-level", "info", *LEASE_FLAGS)
        yield pair
    finally:
        for p in pair.procs:
            if p.alive:
                os.kill(p.proc.pid, signal.SIGCONT)
            p.stop()
        pair.world.close()


def test_leader_frozen_past_its_lease_writes_and_execs_nothing_after_thawing(replicas: Replicas) -> None:
    """Invariant: once another replica holds the Lease, the API server receives from the deposed leader no write
    and no exec (Lease requests aside) except at most the one request it was frozen in the middle of sending
    (its fence, checked right before each write and exec, had passed), even while its elector has not yet
    noticed the loss; each member's hook runs exactly once."""
    world = replicas.world
    leader = replicas.leader()
    world.wait_ready_at("1.0.0", timeout=120)
    world.commit({"apps/hello.yaml": app_with_appending_hook()}, "hello 2.0.0, appending hook")
    leader.poll_now()
    wait_for("the first hook ran", lambda: len(events(world, "HookSucceeded")) >= 1, 120)
    # the leader's next write or exec hangs at the API server (then fails with 504): it is frozen in the middle of
    # an action, and once thawed its worker is free to go on while its elector's Lease read hangs
    world.cluster.faults.add("timeout", WRITE, "!leases", user=token_of(leader.name), delay=IN_FLIGHT_HANG)
    wait_for("the leader's next write or exec hangs", lambda: not world.cluster.faults.rules(), 120, interval=0.05)
    try:
        standby, at_takeover = replicas.freeze_until_taken_over(leader)
        # let the new leader make progress with the old one still frozen, so it is deposed for real
        progress = len(writes_of(world, standby))
        wait_for("the new leader writes", lambda: len(writes_of(world, standby)) > progress, 60)
        block_lease_reads(world, leader)
    finally:
        os.kill(leader.proc.pid, signal.SIGCONT)
    wait_for("the deposed leader exits", lambda: not leader.alive, 120)
    after = writes_of(world, leader)[at_takeover:]
    assert len(after) <= 1, f"the deposed leader wrote or executed after the takeover: {after}"
    assert "this replica no longer holds a fresh Lease" in leader.log()  # it went on, and its fence refused
    world.cluster.faults.clear()
    world.wait_ready_at("2.0.0", timeout=180)
    for pod in sorted(p["metadata"]["name"] for p in world.pods()):
        lines = world.sh(pod, "cat /var/lib/hello/upgrade.log").splitlines()
        assert lines == [f"upgraded-to-2.0.0 {pod}"], (pod, lines)
    assert len(events(world, "HookSucceeded")) == 3


def test_a_deposed_leader_never_writes_the_instance_record(replicas: Replicas) -> None:
    """Invariant: only the Lease holder writes the GitOpsKDSource status (gitops_kd/crds/gitopskdsource.yaml). A
    leader frozen past its lease, thawed after the new leader applied a newer commit, sends no write of the
    record (nor an Event), even while its elector has not yet noticed the loss (its Lease read hangs at the API
    server) and its poller and reconciles run on: lastAppliedRevision and forcePushBaseline stay the new
    leader's."""
    world = replicas.world
    leader = replicas.leader()
    world.wait_ready_at("1.0.0", timeout=120)
    first = git(world.repo, "rev-parse", "HEAD")
    wait_for("the leader idle: the record Ready at the first commit", lambda: in_sync_at(world, first), 60)
    try:
        standby, at_takeover = replicas.freeze_until_taken_over(leader)
        (world.repo / "README.md").write_text("applied by the new leader\n")
        git(world.repo, "add", "-A")
        git(world.repo, "commit", "-q", "-m", "applied by the new leader")
        second = git(world.repo, "rev-parse", "HEAD")
        standby.poll_now()
        wait_for(
            "the new leader records the second commit", lambda: record_status(world).get("lastAppliedRevision") == second, 60
        )
        block_lease_reads(world, leader)
    finally:
        os.kill(leader.proc.pid, signal.SIGCONT)
    wait_for("the thawed leader polls the second commit", lambda: f"commit {second[:12]} accepted" in leader.log(), 60)
    wait_for("the deposed leader exits", lambda: not leader.alive, 60)
    world.cluster.faults.clear()
    after = writes_of(world, leader)[at_takeover:]
    assert not [e for e in after if e.resource in (PLURAL, "events")], f"the deposed leader wrote: {after}"
    assert len(after) <= 1, f"the deposed leader wrote or executed after the takeover: {after}"
    status = record_status(world)
    assert (status["lastAppliedRevision"], status["forcePushBaseline"]) == (second, second), status
    # not vacuous: it did try to record the second commit, and its fence refused the write
    assert f"gitopskdsources/{RECORD}/status: this replica no longer holds a fresh Lease" in leader.log()
