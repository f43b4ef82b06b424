"""cluster_sync / source_for: SYNC of a cluster from its KDRollout and its instance's GitOpsKDSource record (pure)."""

from __future__ import annotations

from typing import Any

from gitops_kd.status.source import SourceRecord
from gitops_kd.status.sync import OUT_OF_SYNC, REFUSED, SUSPENDED, SYNCED, NamedSource, cluster_sync, source_for

APPLIED, HEAD = "a" * 40, "b" * 40


def rollout(phase: str = "Idle", live: str = "1.0.0", target: str = "1.0.0", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"generation": 2},
        "spec": {"targetVersion": target, **spec},
        "status": {"observedGeneration": 2, "phase": phase, "appVersion": live, "fromVersion": "1.0.0", "commit": APPLIED},
    }


def test_suspended_over_refused_over_out_of_sync_over_synced() -> None:
    applied = SourceRecord(applied=APPLIED, attempted=APPLIED)
    refused = SourceRecord(applied=APPLIED, attempted=HEAD, refusal="apps/hello.yaml: spec.version: no rule\nmore")
    assert cluster_sync(rollout(), applied).status == SYNCED
    assert cluster_sync(rollout(), applied).message == f"at {APPLIED[:12]}"
    sync = cluster_sync(rollout(), refused)
    assert sync.status == REFUSED and sync.message == (
        f"head {HEAD[:12]} refused, still at {APPLIED[:12]}: apps/hello.yaml: spec.version: no rule"
    )
    assert cluster_sync(rollout(suspend=True), refused).status == SUSPENDED
    upgrading = cluster_sync(rollout("Upgrading", "1.0.0", "2.0.0"), applied)
    assert (upgrading.status, upgrading.message) == (OUT_OF_SYNC, "Upgrading 1.0.0 → 2.0.0")
    assert cluster_sync(rollout("Stalled", "1.0.0", "2.0.0"), applied).status == OUT_OF_SYNC
    assert cluster_sync({**rollout(), "metadata": {"generation": 3}}, applied).status == OUT_OF_SYNC
    assert cluster_sync(None, applied).status == OUT_OF_SYNC
    assert cluster_sync(rollout(), None).status == SYNCED


def test_source_for_picks_the_only_one_or_the_one_that_applied_the_rollout() -> None:
    one = NamedSource("ns", "a", SourceRecord(applied=HEAD))
    two = NamedSource("ns", "b", SourceRecord(applied=APPLIED))
    assert source_for(rollout(), [one]) is one
    assert source_for(rollout(), [one, two]) is two
    other = {**rollout(), "status": {**rollout()["status"], "commit": "c" * 40}}
    assert source_for(other, [one, two]) is None
    same = [NamedSource("ns", "a", SourceRecord(applied=HEAD)), NamedSource("ns", "b", SourceRecord(applied=HEAD))]
    assert source_for(other, same) is same[0]


def test_a_source_object_reads_its_ready_condition_and_failing() -> None:
    obj = {
        "metadata": {"namespace": "gitops-kd-system", "name": "gitops-kd"},
        "status": {
            "lastAppliedRevision": APPLIED,
            "lastAttemptedRevision": HEAD,
            "refusal": "x",
            "conditions": [{"type": "Ready", "status": "False", "reason": "CommitRefused", "message": "m"}],
        },
    }
    found = NamedSource.from_object(obj)
    assert found.ref == "gitops-kd-system/gitops-kd" and found.failing and found.record.attempted == HEAD
    assert found.as_dict()["refused"] is True and found.as_dict()["refusal"] == ["x"]
