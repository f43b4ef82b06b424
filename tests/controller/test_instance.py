"""The instance record (GitOpsKDSource): its conditions as a pure function, and its writes against the embedded
API server (created on first use, one write per transition, resourceVersion preconditions)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from kubernetes.client.exceptions import ApiException

from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.controller.instance import NOT_READY_AFTER_FAILED_POLLS, InstanceRecord
from gitops_kd.status.source import PLURAL, SourceRecord, source_status
from kdsim.cluster import EmbeddedCluster
from kubeplumb.rest import RestClient
from tests.kdcluster import embedded_cluster

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SHA = "a" * 40
URL = "https://git.example.com/kd-apps.git"


def conditions(record: SourceRecord) -> dict[str, tuple[str, str, str]]:
    status = source_status(record, None, generation=1, not_ready_after=NOT_READY_AFTER_FAILED_POLLS, now=NOW)
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


def test_conditions_follow_kstatus() -> None:
    base = SourceRecord(url=URL, branch="main", applied=SHA, applied_subject="hello 2.0.0")
    assert conditions(base.with_changes(in_sync=True)) == {
        "Ready": ("True", "Succeeded", f"Applied revision: main@sha1:{SHA[:12]}")
    }
    assert conditions(base) == {
        "Ready": ("False", "Progressing", f"applying main@sha1:{SHA[:12]}"),
        "Reconciling": ("True", "Progressing", f"applying main@sha1:{SHA[:12]}"),
    }
    assert conditions(SourceRecord())["Reconciling"][2] == "waiting for the first accepted commit"
    refused = conditions(base.with_changes(in_sync=True, attempted="b" * 40, refusal="commit bbb: history: force\nx"))
    assert refused["Stalled"] == ("True", "CommitRefused", f"commit {'b' * 12} refused: commit bbb: history: force")
    assert refused["Ready"][0] == "False"
    failing = base.with_changes(in_sync=True, git_failures=NOT_READY_AFTER_FAILED_POLLS - 1, git_error="fatal: x")
    assert conditions(failing)["Ready"][0] == "True"  # fewer than N failed polls: still ready
    stalled = conditions(failing.with_changes(git_failures=NOT_READY_AFTER_FAILED_POLLS))["Stalled"]
    assert stalled == ("True", "GitUnreadable", f"3 polls in a row could not read {URL}: fatal: x")


def test_status_round_trips() -> None:
    record = SourceRecord(
        url=URL,
        branch="main",
        applied=SHA,
        applied_subject="s",
        attempted=SHA,
        baseline=SHA,
        git_failures=1,
        git_error="e",
        recoveries=2,
        in_sync=True,
    )
    status = source_status(record, None, generation=1, not_ready_after=3, now=NOW)
    assert SourceRecord.from_status(status) == record


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with embedded_cluster(tmp_path_factory.mktemp("instance"), controllers=False) as c:
        yield c


def record(cluster: EmbeddedCluster, name: str, url: str = URL) -> InstanceRecord:
    return InstanceRecord(cluster.api_client(), namespace="default", name=name, url=url, branch="main")


def test_created_on_first_use_and_one_write_per_transition(cluster: EmbeddedCluster) -> None:
    first = record(cluster, "one")
    assert first.load() is None  # new: nothing to adopt
    writes = first.writes
    assert first.update(applied=SHA, attempted=SHA, baseline=SHA) and first.writes == writes + 1
    assert not first.update(applied=SHA) and first.writes == writes + 1  # no transition, no write
    again = record(cluster, "one")
    found = again.load()
    assert found is not None and (found.applied, found.baseline, found.url) == (SHA, SHA, URL)
    other_repo = record(cluster, "one", url="https://elsewhere.example.com/x.git")
    assert other_repo.load() is None  # another repository's commits are not adopted


def test_writes_carry_the_resource_version_precondition(cluster: EmbeddedCluster) -> None:
    """Invariant: a status write is conditional on the resourceVersion last read; a concurrent write makes it
    re-read and write on top (never a blind overwrite of an unseen version)."""
    rest = RestClient(cluster.api_client())
    mine = record(cluster, "two")
    mine.load()
    stale = rest.get(ROLLOUT_API_VERSION, PLURAL, "default", "two")
    mine.update(applied=SHA)
    with pytest.raises(ApiException) as info:  # the server enforces the precondition
        rest.replace(ROLLOUT_API_VERSION, PLURAL, "default", "two", {**stale, "status": {"url": "x"}}, subresource="status")
    assert info.value.status == 409
    current = rest.get(ROLLOUT_API_VERSION, PLURAL, "default", "two")
    rest.replace(
        ROLLOUT_API_VERSION,
        PLURAL,
        "default",
        "two",
        {**current, "status": {**current["status"], "refusal": "?"}},
        subresource="status",
    )  # someone else writes in between
    assert mine.update(attempted="b" * 40)
    final = rest.get(ROLLOUT_API_VERSION, PLURAL, "default", "two")["status"]
    assert (final["lastAppliedRevision"], final["lastAttemptedRevision"], final["refusal"]) == (SHA, "b" * 40, "")


def _status_writes(cluster: EmbeddedCluster, name: str) -> int:
    """Status writes of the GitOpsKDSource ``name`` the API server received (from any client)."""
    return sum(
        1
        for e in cluster.access_log.entries()
        if e.resource == PLURAL and e.name == name and e.subresource == "status" and e.verb in ("update", "patch")
    )


class LeaseLostInFlight:
    """A fence that lets ``allowed`` writes pass its check, then is down (the Lease lost while they were sent)."""

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed

    def __call__(self) -> bool:
        self.allowed -= 1
        return self.allowed >= 0


def test_a_replica_whose_fence_is_down_writes_no_record(cluster: EmbeddedCluster) -> None:
    """Invariant: the instance record is fenced like the executor: with the fence down (a deposed or frozen
    leader) no status write and no Event reach the API server; the record stays pending, written once it leads."""
    mine = record(cluster, "three")
    mine.load()
    leading = [False]
    mine.set_fence(lambda: leading[0])
    before, events = _status_writes(cluster, "three"), len(cluster.access_log.entries())
    assert mine.update(applied=SHA)
    mine.event("Probe", "not sent")
    assert _status_writes(cluster, "three") == before
    assert not [e for e in cluster.access_log.entries()[events:] if e.verb != "get"]
    rest = RestClient(cluster.api_client())
    assert not rest.get(ROLLOUT_API_VERSION, PLURAL, "default", "three")["status"]["lastAppliedRevision"]
    leading[0] = True
    mine.flush()
    assert rest.get(ROLLOUT_API_VERSION, PLURAL, "default", "three")["status"]["lastAppliedRevision"] == SHA


def test_after_a_conflict_a_deposed_replica_rereads_and_does_not_write_on_top(cluster: EmbeddedCluster) -> None:
    """Invariant: a replica that lost the Lease while its status write was on its way gets 409 (the new leader
    wrote since its read), re-reads and stops: the new leader's lastAppliedRevision and forcePushBaseline stay;
    the API server received exactly that one write from it."""
    rest = RestClient(cluster.api_client())
    old = record(cluster, "four")
    old.load()
    old.update(applied=SHA, baseline=SHA)
    new_leader = record(cluster, "four")
    new_leader.load()
    assert new_leader.update(applied="c" * 40, baseline="c" * 40)
    old.set_fence(LeaseLostInFlight(1))
    before = _status_writes(cluster, "four")
    assert old.update(attempted="d" * 40, refusal="stale view")  # sent on a stale resourceVersion: 409
    assert _status_writes(cluster, "four") == before + 1
    status = rest.get(ROLLOUT_API_VERSION, PLURAL, "default", "four")["status"]
    assert (status["lastAppliedRevision"], status["forcePushBaseline"]) == ("c" * 40, "c" * 40)
    assert status.get("lastAttemptedRevision") != "d" * 40


def test_a_failed_write_stays_pending_until_a_flush_lands(cluster: EmbeddedCluster) -> None:
    """Invariant: a record write that failed is not forgotten: `pending` until a later flush lands it."""
    mine = record(cluster, "pending")
    mine.load()
    cluster.faults.add("error", "update", f"{PLURAL}/status", 2)
    mine.update(applied=SHA, baseline=SHA)
    assert mine.pending
    mine.flush()
    assert mine.pending  # the second 500
    mine.flush()
    assert not mine.pending
    status = RestClient(cluster.api_client()).get(ROLLOUT_API_VERSION, PLURAL, "default", "pending")["status"]
    assert (status["lastAppliedRevision"], status["forcePushBaseline"]) == (SHA, SHA)


def test_refresh_writes_back_an_edit_and_recreates_a_deleted_object(cluster: EmbeddedCluster) -> None:
    """Invariant: the leader's record is what the cluster holds: refresh() writes back a status edited out of band
    and creates a deleted object again, with the applied commit and baseline it knows."""
    rest = RestClient(cluster.api_client())
    mine = record(cluster, "kept")
    mine.load()
    mine.update(applied=SHA, baseline=SHA, url=URL, branch="main")
    rest.patch(
        ROLLOUT_API_VERSION, PLURAL, "default", "kept", {"status": {"lastAppliedRevision": "b" * 40}}, subresource="status"
    )
    assert mine.refresh()
    assert rest.get(ROLLOUT_API_VERSION, PLURAL, "default", "kept")["status"]["lastAppliedRevision"] == SHA
    rest.delete(ROLLOUT_API_VERSION, PLURAL, "default", "kept")
    assert mine.refresh()
    status = rest.get(ROLLOUT_API_VERSION, PLURAL, "default", "kept")["status"]
    assert (status["lastAppliedRevision"], status["forcePushBaseline"]) == (SHA, SHA)
