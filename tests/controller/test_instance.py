"""The instance record (GitOpsKDSource): its conditions as a pure function, and its writes against the embedded
API server (created on first use, one write per transition, resourceVersion preconditions)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from kubernetes.client.exceptions import ApiException

from gitops_kd.controller.instance import NOT_READY_AFTER_FAILED_POLLS, InstanceRecord
from gitops_kd.kube.rest import RestClient
from gitops_kd.status.source import API_VERSION, PLURAL, SourceRecord, source_status
from kdsim.cluster import EmbeddedCluster
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
        "Ready": ("True", "Succeeded", f"Applied revision: main@sha1:{SHA[:12]}")}
    assert conditions(base) == {"Ready": ("False", "Progressing", f"applying main@sha1:{SHA[:12]}"),
                                "Reconciling": ("True", "Progressing", f"applying main@sha1:{SHA[:12]}")}
    assert conditions(SourceRecord())["Reconciling"][2] == "waiting for the first accepted commit"
    refused = conditions(base.with_changes(in_sync=True, attempted="b" * 40, refusal="commit bbb: history: force\nx"))
    assert refused["Stalled"] == ("True", "CommitRefused", f"commit {'b' * 12} refused: commit bbb: history: force")
    assert refused["Ready"][0] == "False"
    failing = base.with_changes(in_sync=True, git_failures=NOT_READY_AFTER_FAILED_POLLS - 1, git_error="fatal: x")
    assert conditions(failing)["Ready"][0] == "True"  # fewer than N failed polls: still ready
    stalled = conditions(failing.with_changes(git_failures=NOT_READY_AFTER_FAILED_POLLS))["Stalled"]
    assert stalled == ("True", "GitUnreadable", f"3 polls in a row could not read {URL}: fatal: x")


def test_status_round_trips() -> None:
    record = SourceRecord(url=URL, branch="main", applied=SHA, applied_subject="s", attempted=SHA, baseline=SHA,
                          git_failures=1, git_error="e", recoveries=2, in_sync=True)
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
    stale = rest.get(API_VERSION, PLURAL, "default", "two")
    mine.update(applied=SHA)
    with pytest.raises(ApiException) as info:  # the server enforces the precondition
        rest.replace(API_VERSION, PLURAL, "default", "two", {**stale, "status": {"url": "x"}}, subresource="status")
    assert info.value.status == 409
    current = rest.get(API_VERSION, PLURAL, "default", "two")
    rest.replace(API_VERSION, PLURAL, "default", "two", {**current, "status": {**current["status"], "refusal": "?"}},
                 subresource="status")  # someone else writes in between
    assert mine.update(attempted="b" * 40)
    final = rest.get(API_VERSION, PLURAL, "default", "two")["status"]
    assert (final["lastAppliedRevision"], final["lastAttemptedRevision"], final["refusal"]) == (SHA, "b" * 40, "")
