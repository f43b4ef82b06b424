"""Replicas come and go while a step runs (issue 41, items 1-3): a shard changes hands only once its old holder has
finished or abandoned the action in flight, a step found running is awaited (never StepInterrupted), one fence
whatever the layout (`--shards 1`, 4, 6), and a push to a replica not holding shard 0 reaches the one that acts.
Real `gitops-kd run` processes on one embedded cluster. Invariants (tests/ha/handover.py `Handover.finish`): no step
run twice, no StepInterrupted, no cluster Stalled, every cluster Ready at 2.0.0."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client.exceptions import ApiException

from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.kube.shardleases import shard_lease
from gitops_kd.status.source import PLURAL
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess
from tests.e2e.harness import hello_app
from tests.ha.handover import LEASES_API, Handover, names_for, shard_holders
from tests.ha.test_failover import SYSTEM_NS

pytestmark = pytest.mark.timeout(900)  # 30 s migrations, replicas replaced one at a time, on a loaded machine


@pytest.fixture()
def make(tmp_path: Path) -> Iterator[list[Handover]]:
    made: list[Handover] = []
    yield made
    for h in made:
        h.close()


def _ready(proc: RunProcess) -> None:
    proc.url(timeout=180)  # a sharded replica serves once its informers synced: slow on a loaded machine
    wait_for(f"{proc.name} ready", lambda: proc.get("/readyz")[0] == 200, 90, 0.2)


def test_a_replica_joining_while_migrations_run_takes_its_shard_only_after_they_finish(
    tmp_path: Path, make: list[Handover]
) -> None:
    """Replica A holds both shards and migrates a pod of each cluster; B joins. A gives B a shard only once that
    shard's migration (its action in flight) finished: no step twice, no StepInterrupted, no Stalled."""
    h = Handover(tmp_path, names_for(2, 2))
    make.append(h)
    h.start("replica-a", 2)
    h.ready_at_1()
    h.upgrade()
    h.wait_migrating()
    _ready(h.start("replica-b", 2))
    h.window("replica-b")  # the old code: A released a shard at once, B re-ran its migration (exit 97, StepInterrupted)
    assert "replica-b" not in shard_holders(h.world).values()  # both shards drain: a migration holds each
    h.release()
    wait_for("B holds a shard", lambda: "replica-b" in shard_holders(h.world).values(), 120, 0.2)
    h.finish()


def test_a_frozen_replica_resumed_mid_step_neither_interrupts_nor_repeats_it(tmp_path: Path, make: list[Handover]) -> None:
    """A and B hold a shard each, both migrating; A is SIGSTOPped: B takes A's shard after its Lease expired and
    awaits the migration A's exec still runs in the pod; A resumes and takes a shard back only once B released it
    (drained): no step twice, no StepInterrupted, no Stalled."""
    h = Handover(tmp_path, names_for(2, 2))
    make.append(h)
    a = h.start("replica-a", 2)
    wait_for("A holds both shards", lambda: list(shard_holders(h.world).values()) == ["replica-a"] * 2, 60, 0.2)
    h.start("replica-b", 2)
    wait_for("a shard each", lambda: sorted(shard_holders(h.world).values()) == ["replica-a", "replica-b"], 60, 0.2)
    h.ready_at_1()
    h.upgrade()
    h.wait_migrating()
    os.kill(a.proc.pid, signal.SIGSTOP)
    try:
        wait_for("B holds both shards", lambda: list(shard_holders(h.world).values()) == ["replica-b"] * 2, 60, 0.1)
        h.window("replica-b")  # B awaits the migration A's exec runs on in the pod (the old code: exit 97, StepInterrupted)
    finally:
        os.kill(a.proc.pid, signal.SIGCONT)
    h.window("replica-a")  # A resumed: it takes a shard back only once B drained it
    h.finish()
    wait_for("a shard each again", lambda: sorted(shard_holders(h.world).values()) == ["replica-a", "replica-b"], 60, 0.2)


def test_a_shard_lease_edited_to_another_holder_hands_over_without_a_step_twice(tmp_path: Path, make: list[Handover]) -> None:
    """A and B hold a shard each, both migrating; A's shard Lease is edited by hand to name B. A stops acting at once,
    B takes the shard only once that Lease expired, and awaits the migration A's exec runs: no step twice."""
    h = Handover(tmp_path, names_for(2, 2))
    make.append(h)
    h.start("replica-a", 2)
    wait_for("A holds both shards", lambda: list(shard_holders(h.world).values()) == ["replica-a"] * 2, 60, 0.2)
    h.start("replica-b", 2)
    wait_for("a shard each", lambda: sorted(shard_holders(h.world).values()) == ["replica-a", "replica-b"], 60, 0.2)
    h.ready_at_1()
    h.upgrade()
    h.wait_migrating()
    shard = next(s for (_, s), holder in shard_holders(h.world).items() if holder == "replica-a")
    other = h.world.rest.get(LEASES_API, "leases", SYSTEM_NS, shard_lease("gitops-kd", 1 - shard))

    def edited() -> bool:  # kubectl edit: B's identity; retried when A's renewal came first (409)
        lease = h.world.rest.get(LEASES_API, "leases", SYSTEM_NS, shard_lease("gitops-kd", shard))
        lease["spec"]["holderIdentity"] = other["spec"]["holderIdentity"]
        try:
            h.world.rest.replace(LEASES_API, "leases", SYSTEM_NS, shard_lease("gitops-kd", shard), lease)
        except ApiException as exc:
            if exc.status != 409:
                raise
            return False
        return True

    wait_for("the Lease edited", edited, 30, 0.05)
    h.window("replica-b")  # the old code: B acted on the edited shard at once and re-ran its migration (StepInterrupted)
    h.finish()


def _roll(h: Handover, old: list[str], new: list[str], shards: int) -> None:
    """A Deployment's rolling update with maxSurge 1: a new replica starts and is Ready, then an old one stops."""
    for before, after in zip(old, new, strict=True):
        _ready(h.start(after, shards))
        h.window(after)  # both layouts live, migrations held in flight: only one layout acts
        h.release()
        h.procs[before].stop()


@pytest.mark.parametrize(("before", "after"), [(4, 6), (1, 4), (4, 1)], ids=["4-to-6", "1-to-4", "4-to-1"])
def test_a_rolling_update_that_changes_the_shard_layout_keeps_every_rollout_going(
    tmp_path: Path, make: list[Handover], before: int, after: int
) -> None:
    """Two replicas of `--shards before` upgrading (migrations running) are replaced, one at a time, by two of
    `--shards after` (`--shards 1`: the leader-elected mode): replicas of different layouts see each other's Leases
    and only one layout acts at a time: no step twice, no StepInterrupted, no Stalled."""
    h = Handover(tmp_path, names_for(max(before, after), 2))
    make.append(h)
    _ready(h.start("old-a", before))
    h.start("old-b", before)
    h.ready_at_1()
    h.upgrade()
    h.wait_migrating()
    _roll(h, ["old-a", "old-b"], ["new-a", "new-b"], after)
    h.finish()
    if after > 1:
        assert {layout for layout, _ in shard_holders(h.world)} >= {str(after)}
        assert all(holder in ("new-a", "new-b") for (layout, _), holder in shard_holders(h.world).items() if holder)


def _attempted(h: Handover) -> str:
    obj = h.world.rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, SYSTEM_NS, "gitops-kd") or {}
    return str((obj.get("status") or {}).get("lastAttemptedRevision") or "")


def test_a_push_to_the_replica_not_holding_shard_0_starts_the_upgrade_within_seconds(
    tmp_path: Path, make: list[Handover]
) -> None:
    """`--interval 300`: a push webhook delivered to the replica that does not hold shard 0 wakes shard 0's holder
    (it writes the record the others wait for): the pushed commit is evaluated and the upgrade starts within
    seconds, not at the next poll."""
    h = Handover(tmp_path, names_for(2, 2))
    make.append(h)
    h.start("replica-a", 2, "--interval", "300")
    wait_for("A holds both shards", lambda: list(shard_holders(h.world).values()) == ["replica-a"] * 2, 60, 0.2)
    h.start("replica-b", 2, "--interval", "300")
    wait_for("a shard each", lambda: sorted(shard_holders(h.world).values()) == ["replica-a", "replica-b"], 60, 0.2)
    h.ready_at_1()
    wrong = h.procs["replica-a" if shard_holders(h.world)[("2", 0)] == "replica-b" else "replica-b"]
    head = h.world.commit({"apps/hello.yaml": hello_app("2.0.0")}, "hello 2.0.0")  # nobody polls for 300 s
    assert _attempted(h) != head
    request = urllib.request.Request(wrong.url() + "/webhook", data=b"{}", method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        status, body = answer.status, json.loads(answer.read())
    assert status == 202 and "shard 0" in body["status"], body
    pushed = time.monotonic()
    wait_for("shard 0's holder evaluated the pushed commit", lambda: _attempted(h) == head, 30, 0.2)
    wait_for(
        "the upgrade started",
        lambda: any(((h.world.rollout(c) or {}).get("status") or {}).get("targetVersion") == "2.0.0" for c in h.clusters),
        30,
        0.2,
    )
    assert time.monotonic() - pushed < 30
