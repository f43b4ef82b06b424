"""ApplyCluster failures in a row against the embedded API server (no controllers): counted in the KDRollout,
stalled at STALL_AFTER_FAILURES, races not counted, lifted by a write that goes through."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from gitops_kd.constants import STALL_AFTER_FAILURES
from gitops_kd.execute import Executor
from gitops_kd.plan.actions import ADOPT, ApplyCluster, EnsureRollout
from kdsim.cluster import EmbeddedCluster
from kubeplumb.rest import RestClient
from tests.kdcluster import embedded_cluster

ROOT = Path(__file__).resolve().parents[2]
KD, ROLLOUT, NS = "kubedirector.hpe.com/v1beta1", "gitops-kd.io/v1alpha1", "default"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[EmbeddedCluster, RestClient, dict[str, Any]]]:
    """(cluster, rest, the hello-dev manifest) with the KDApp, the KDCluster and its KDRollout (Idle at 1.0.0)."""
    with embedded_cluster(tmp_path / "cluster", controllers=False) as cluster:
        rest = RestClient(cluster.api_client())
        docs = {}
        for path, plural in (("apps/hello.yaml", "kubedirectorapps"), ("clusters/hello-dev.yaml", "kubedirectorclusters")):
            docs[plural] = yaml.safe_load((ROOT / "repo-template" / path).read_text())
            docs[plural]["metadata"]["namespace"] = NS
            rest.create(KD, plural, NS, docs[plural])
        Executor(cluster.api_client()).execute(EnsureRollout(NS, "hello-dev", "hello", "1.0.0", None, "c1", ADOPT))
        yield cluster, rest, docs["kubedirectorclusters"]


def labelled(manifest: dict[str, Any], team: str) -> dict[str, Any]:
    meta = manifest["metadata"]
    return {**manifest, "metadata": {**meta, "labels": {**meta["labels"], "team": team}}}


def status(rest: RestClient) -> dict[str, Any]:
    return rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev").get("status") or {}


def test_timeouts_in_a_row_stall_with_applyfailed_and_a_409_is_a_race_not_a_failure(world: Any) -> None:
    """Invariant: only failures count (a 409 is re-raised for the runtime to re-plan, and counts nothing); the
    STALL_AFTER_FAILURES-th timeout in a row stalls the KDRollout (ApplyFailed, code 504) in one write, with backoff
    before; retrying while stalled writes nothing; the write going through lifts it (Reconciling, phase Idle)."""
    cluster, rest, manifest = world
    ex = Executor(cluster.api_client())
    action = ApplyCluster(NS, "hello-dev", labelled(manifest, "blue"))
    cluster.faults.add("conflict", verb="update", resource="kubedirectorclusters")
    with pytest.raises(ApiException) as raised:
        ex.execute(action)
    assert raised.value.status == 409 and "applyFailure" not in status(rest)

    cluster.faults.add("timeout", verb="update", resource="kubedirectorclusters", count=100, delay=0.05)
    delays = [ex.execute(action).requeue_after for _ in range(STALL_AFTER_FAILURES - 1)]
    assert delays == [2.0, 4.0, 8.0, 16.0]
    assert status(rest)["applyFailure"]["failures"] == STALL_AFTER_FAILURES - 1 and status(rest)["phase"] == "Idle"
    last = ex.execute(action)
    assert last.failed and last.requeue_after == 30.0
    stalled = status(rest)
    assert (stalled["phase"], stalled["stalledReason"], stalled["applyFailure"]["code"]) == ("Stalled", "ApplyFailed", 504)
    assert f"failed {STALL_AFTER_FAILURES} times in a row" in stalled["message"]
    version = rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")["metadata"]["resourceVersion"]
    ex.execute(action)
    assert rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")["metadata"]["resourceVersion"] == version

    cluster.faults.clear()
    done = ex.execute(ApplyCluster(NS, "hello-dev", labelled(manifest, "blue"), counted=True))
    assert done.changed and not done.failed
    lifted = status(rest)
    assert (lifted["phase"], lifted.get("stalledReason"), lifted.get("applyFailure")) == ("Idle", None, None)
    assert {c["type"]: c["status"] for c in lifted["conditions"]} == {"Ready": "False", "Reconciling": "True"}
    assert rest.get(KD, "kubedirectorclusters", NS, "hello-dev")["metadata"]["labels"]["team"] == "blue"


def test_a_new_manifest_of_the_object_counts_from_one_again(world: Any) -> None:
    """Invariant: "in a row" is per write: another manifest of the object (a new commit) starts the count again."""
    cluster, rest, manifest = world
    ex = Executor(cluster.api_client())
    cluster.faults.add("error", verb="update", resource="kubedirectorclusters", count=100)
    for _ in range(3):
        ex.execute(ApplyCluster(NS, "hello-dev", labelled(manifest, "blue")))
    assert status(rest)["applyFailure"]["failures"] == 3
    outcome = ex.execute(ApplyCluster(NS, "hello-dev", labelled(manifest, "green")))
    assert outcome.requeue_after == 2.0 and status(rest)["applyFailure"]["failures"] == 1
