"""A push webhook that reaches the standby replica (deploy/ runs two behind one Service) makes the leader poll."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.status.source import PLURAL
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E, hello_app
from tests.ha.test_failover import SYSTEM_NS, leader_of, start_replicas

INTERVAL = 600.0  # the replicas' poll interval: only a request can make the leader poll during the test
RECORD = "gitops-kd"  # the GitOpsKDSource is named after the Lease
PUSH_TO_POLL = 30.0  # the longest a push may take to reach the leader's poll (its sync check runs every 2 s)


@pytest.fixture()
def pair(tmp_path: Path) -> Iterator[tuple[E2E, list[RunProcess]]]:
    world, procs = E2E(tmp_path), []
    try:
        start_replicas(world, tmp_path, procs, "--interval", str(INTERVAL), "--log-level", "info")
        yield world, procs
    finally:
        for p in procs:
            p.stop()
        world.close()


def _attempted(world: E2E) -> str:
    obj = world.rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, SYSTEM_NS, RECORD) or {}
    return str((obj.get("status") or {}).get("lastAttemptedRevision") or "")


def test_a_push_to_the_standby_makes_the_leader_poll_at_once(pair: tuple[E2E, list[RunProcess]]) -> None:
    """Invariant: a push webhook accepted by either replica leads to a poll of Git by the leader within seconds
    (not at the next interval); the standby's answer says it asked the leader."""
    world, procs = pair
    leader = wait_for("a leader", lambda: leader_of(world, procs), 60)
    standby = next(p for p in procs if p is not leader)
    world.wait_ready_at("1.0.0", timeout=120)
    head = world.commit({"apps/hello.yaml": hello_app("2.0.0")}, "hello 2.0.0")
    assert _attempted(world) != head
    request = urllib.request.Request(standby.url() + "/webhook", data=b"{}", method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        status, body = answer.status, json.loads(answer.read())
    assert status == 202 and "standby" in body["status"] and "leader" in body["status"], body
    wait_for("the leader polled the pushed commit", lambda: _attempted(world) == head, PUSH_TO_POLL)
