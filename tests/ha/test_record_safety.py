"""The GitOpsKDSource under an adversary: failing writes, out-of-band edits and deletes of the record never lead
to a downgrade, a force push let through or a stale record a new leader plans from (real `gitops-kd run`
replicas, SIGKILL of the leader)."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from gitops_kd.cli import main
from gitops_kd.constants import ROLLOUT_API_VERSION, STALL_RECORD_UNTRUSTED
from gitops_kd.status.events import RECORD_RECREATED, RECORD_REWRITTEN
from gitops_kd.status.source import PLURAL
from gitops_kd.testing import wait_for
from tests.e2e.harness import git, hello_app
from tests.ha.test_failover import SYSTEM_NS
from tests.ha.test_source_record import LEASE, Pair, RolloutTargets

BOGUS = "0123456789abcdef0123456789abcdef01234567"
SA = "gitops-kd-sa"  # the replicas' bearer token (Pair's kubeconfig): how the access log tells their requests
FAILURES = 3  # 500s on the record's status writes


def upgraded(pair: Pair, name: str = "replica-a") -> tuple[Any, str, str]:
    """A leader that applied hello 1.0.0 (first commit), then 2.0.0 (second); the record Ready at the second."""
    leader = pair.replica(name)
    pair.leads(leader)
    pair.world.wait_ready_at("1.0.0", timeout=120)
    first = pair.head()
    pair.ready_at(first)
    second = pair.world.commit({"apps/hello.yaml": hello_app("2.0.0")}, "hello 2.0.0")
    pair.world.wait_ready_at("2.0.0", timeout=180)
    pair.ready_at(second)
    return leader, first, second


def record_events(pair: Pair, reason: str) -> list[dict[str, Any]]:
    return [
        e
        for e in pair.world.rest.list("v1", "events", SYSTEM_NS)["items"]
        if e["involvedObject"].get("kind") == "GitOpsKDSource" and e.get("reason") == reason
    ]


def edit_record(pair: Pair, applied: str, baseline: str) -> None:
    pair.world.rest.patch(
        ROLLOUT_API_VERSION,
        PLURAL,
        SYSTEM_NS,
        LEASE,
        {"status": {"lastAppliedRevision": applied, "forcePushBaseline": baseline}},
        subresource="status",
    )


def test_record_write_failing_is_retried_before_anything_acts_on_it(pair: Pair) -> None:
    """Invariant: a record write that fails is retried until the cluster holds what was applied (not only "at the
    next change"), and no step of the plan runs before it landed: three 500s on the status write of a 1.0.0 ->
    2.0.0 upgrade, the KDRollout is first written after the record holds the 2.0.0 commit; after a bad commit and
    a SIGKILL of the leader the new replica never downgrades."""
    a = pair.replica("replica-a")
    pair.leads(a)
    pair.world.wait_ready_at("1.0.0", timeout=120)
    first = pair.head()
    pair.ready_at(first)
    log = pair.world.cluster.access_log
    start = len(log.entries(SA))
    pair.world.cluster.faults.add("error", "update", f"{PLURAL}/status", FAILURES)
    second = pair.world.commit({"apps/hello.yaml": hello_app("2.0.0")}, "hello 2.0.0")
    pair.world.wait_ready_at("2.0.0", timeout=180)
    pair.ready_at(second, timeout=30)
    assert not pair.world.cluster.faults.rules(), "the injected 500s were not all hit"
    writes = [e for e in log.entries(SA)[start:] if e.verb in ("create", "update", "patch", "delete")]
    record_writes = [i for i, e in enumerate(writes) if e.resource == PLURAL and e.subresource == "status"]
    first_step = next(i for i, e in enumerate(writes) if e.resource == "kdrollouts")
    assert record_writes[FAILURES] < first_step, (
        f"a step of the upgrade ran before the record held its commit: {writes[: first_step + 1]}"
    )

    bad = pair.world.commit({"apps/hello.yaml": hello_app("2.0.0", roles="not-a-list")}, "a bad commit")
    wait_for("the bad commit refused", lambda: pair.status().get("lastAttemptedRevision") == bad, 60)
    uids = pair.pod_uids()
    targets = RolloutTargets(pair.world)
    try:
        a.kill()
        b = pair.replica("replica-b")
        pair.leads(b, timeout=60)
        wait_for("replica-b reconciling (ready)", lambda: b.get("/readyz")[0] == 200, 90)
        wait_for("replica-b refused the bad head", lambda: (pair.condition("Stalled") or {}).get("status") == "True", 60)
        pair.world.wait_ready_at("2.0.0", timeout=60)
    finally:
        targets.stop()
    assert pair.status()["lastAppliedRevision"] == second, pair.status()
    assert not pair.events("DowngradeStarted"), "the cluster was downgraded"
    assert "1.0.0" not in targets.seen, targets.seen
    assert pair.pod_uids() == uids, "a pod was replaced after the takeover"


def test_record_edited_out_of_band_is_written_back_by_the_leader(pair: Pair) -> None:
    """Invariant: the leader's record says what it applied: a status patched to an older applied commit and a
    force-push baseline that does not exist is written back (RecordRewritten Event) while the leader runs."""
    _a, first, second = upgraded(pair)
    edit_record(pair, first, BOGUS)
    wait_for(
        "the record written back",
        lambda: pair.status().get("lastAppliedRevision") == second and pair.status().get("forcePushBaseline") == second,
        30,
    )
    assert record_events(pair, RECORD_REWRITTEN)


@pytest.mark.parametrize("edit", ["older-applied", "bogus-applied"])
def test_record_edited_while_no_leader_runs_stalls_the_next_one(pair: Pair, edit: str) -> None:
    """Invariant: a new leader never plans from a record that disagrees with Git or the cluster: a record edited
    while no replica leads (an older applied commit and a baseline that does not exist, or an applied sha not in
    Git) stalls RecordUntrusted, nothing is downgraded; deleting the record lets the leader re-establish it from
    the KDRollouts and go Ready at the commit the cluster runs."""
    a, first, second = upgraded(pair)
    uids = pair.pod_uids()
    a.kill()
    if edit == "older-applied":
        edit_record(pair, first, BOGUS)
    else:
        edit_record(pair, BOGUS, second)
    targets = RolloutTargets(pair.world)
    try:
        b = pair.replica("replica-b")
        pair.leads(b, timeout=60)

        def stalled() -> dict[str, Any] | None:
            cond = pair.condition("Stalled")
            return cond if cond and cond["status"] == "True" and cond["reason"] == STALL_RECORD_UNTRUSTED else None

        cond = wait_for("the edited record stalls RecordUntrusted", stalled, 90)
        assert "not planning" in cond["message"], cond
        assert b.get("/readyz")[0] != 200
        shown = CliRunner().invoke(main, ["status", "-A", "--kubeconfig", str(pair.world.cluster.kubeconfig)])
        assert shown.exit_code == 1 and STALL_RECORD_UNTRUSTED in shown.output, shown.output  # status says so
        pair.world.rest.delete(ROLLOUT_API_VERSION, PLURAL, SYSTEM_NS, LEASE)
        pair.ready_at(second, timeout=90)
    finally:
        targets.stop()
    assert pair.status()["forcePushBaseline"] == second
    assert not pair.events("DowngradeStarted"), "the cluster was downgraded"
    assert "1.0.0" not in targets.seen, targets.seen
    assert pair.pod_uids() == uids, "a pod was replaced"


def test_deleted_record_is_created_again_at_once(pair: Pair) -> None:
    """Invariant: the GitOpsKDSource exists while a leader runs: deleted, it is created again with what was
    applied (RecordRecreated Event), and `gitops-kd sync` goes through it."""
    _a, _first, second = upgraded(pair)
    pair.world.rest.delete(ROLLOUT_API_VERSION, PLURAL, SYSTEM_NS, LEASE)
    pair.ready_at(second, timeout=30)
    assert pair.status()["forcePushBaseline"] == second
    assert record_events(pair, RECORD_RECREATED)
    done = CliRunner().invoke(
        main, ["sync", "-n", SYSTEM_NS, "--kubeconfig", str(pair.world.cluster.kubeconfig), "--timeout", "60"]
    )
    assert done.exit_code == 0, done.output


def test_record_deleted_while_no_leader_runs_still_refuses_a_force_push(pair: Pair) -> None:
    """Invariant: force-push protection survives the loss of the record: with the GitOpsKDSource deleted while no
    replica leads, the new leader re-establishes the baseline from the KDRollouts and refuses a branch rewritten
    back to the 1.0.0 commit (CommitRefused, nothing downgraded)."""
    a, first, second = upgraded(pair)
    uids = pair.pod_uids()
    a.kill()
    pair.world.rest.delete(ROLLOUT_API_VERSION, PLURAL, SYSTEM_NS, LEASE)
    git(pair.world.repo, "reset", "-q", "--hard", first)
    rewritten = pair.world.commit({"README.md": "rewritten history\n"}, "rewritten: drop hello 2.0.0")
    targets = RolloutTargets(pair.world)
    try:
        b = pair.replica("replica-b")
        pair.leads(b, timeout=60)

        def refused() -> dict[str, Any] | None:
            cond = pair.condition("Stalled")
            return (
                cond
                if cond and cond["reason"] == "CommitRefused" and pair.status().get("lastAttemptedRevision") == rewritten
                else None
            )

        cond = wait_for("the rewritten head refused", refused, 90)
    finally:
        targets.stop()
    assert "force" in cond["message"], cond
    assert pair.status()["forcePushBaseline"] == second, pair.status()
    assert not pair.events("DowngradeStarted"), "the cluster was downgraded"
    assert "1.0.0" not in targets.seen, targets.seen
    assert pair.pod_uids() == uids, "a pod was replaced"


def test_a_record_with_its_baseline_behind_its_applied_commit_is_repaired(pair: Pair) -> None:
    """Invariant: no record the controller itself could write stalls it forever: lastAppliedRevision at the 2.0.0
    commit with forcePushBaseline at the older 1.0.0 one (what a shard-0 takeover racing a new commit wrote
    before 64fbf8d) is adopted by the next leader with the baseline lifted to the applied commit, never stalled
    RecordUntrusted, and nothing is replaced or downgraded."""
    a, first, second = upgraded(pair)
    uids = pair.pod_uids()
    a.kill()
    edit_record(pair, second, first)
    b = pair.replica("replica-b")
    pair.leads(b, timeout=60)
    wait_for("the baseline lifted", lambda: pair.status().get("forcePushBaseline") == second, 90)
    pair.ready_at(second, timeout=60)
    assert not record_events(pair, STALL_RECORD_UNTRUSTED), "the record was distrusted"
    assert (pair.condition("Stalled") or {}).get("status") != "True", pair.status()
    assert not pair.events("DowngradeStarted"), "the cluster was downgraded"
    assert pair.pod_uids() == uids, "a pod was replaced"
