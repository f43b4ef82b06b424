"""statefulset_health: kubectl rollout-status rules on StatefulSets shaped as the embedded controller writes them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gitops_kd.health import HealthStatus, health_of, statefulset_health
from kdsim.controllers import statefulset_plan

H, P = HealthStatus.HEALTHY, HealthStatus.PROGRESSING


def sts(*, replicas: int = 3, generation: int = 2, strategy: dict[str, Any] | None = None, **status: Any) -> dict[str, Any]:
    """A StatefulSet as the API server stores it (defaults applied) with the given status fields."""
    base_status = {
        "observedGeneration": generation,
        "replicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "currentReplicas": replicas,
        "updatedReplicas": replicas,
        "currentRevision": "kdss-x-7d9c",
        "updateRevision": "kdss-x-7d9c",
        "collisionCount": 0,
    }
    base_status.update(status)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "kdss-x", "namespace": "default", "generation": generation},
        "spec": {
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "updateStrategy": strategy or {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        },
        "status": base_status,
    }


ON_DELETE = {"type": "OnDelete"}
ROLLING_NO_PARTITION = {"type": "RollingUpdate"}


@pytest.mark.parametrize(
    "obj, status, message",
    [
        (sts(observedGeneration=0), P, "Waiting for statefulset spec update to be observed..."),
        (sts(observedGeneration=1), P, "Waiting for statefulset spec update to be observed..."),
        (sts(readyReplicas=1), P, "Waiting for 2 pods to be ready..."),
        (
            sts(strategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}, updatedReplicas=1),
            P,
            "Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...",
        ),
        (
            sts(strategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}, updatedReplicas=2),
            H,
            "partitioned roll out complete: 2 new pods have been updated...",
        ),
        (sts(), H, "partitioned roll out complete: 3 new pods have been updated..."),
        (sts(strategy=ON_DELETE, updatedReplicas=3, currentRevision="kdss-x-old"), H, "statefulset has 3 ready pods"),
        (
            sts(strategy=ON_DELETE, updatedReplicas=1, updateRevision="kdss-x-new"),
            P,
            "Waiting for 2 pods to be replaced at revision kdss-x-new (OnDelete)...",
        ),
        (
            sts(strategy=ROLLING_NO_PARTITION, updatedReplicas=2, updateRevision="kdss-x-new"),
            P,
            "waiting for statefulset rolling update to complete 2 pods at revision kdss-x-new...",
        ),
        (sts(strategy=ROLLING_NO_PARTITION), H, "statefulset rolling update complete 3 pods at revision kdss-x-7d9c..."),
    ],
)
def test_rules(obj: dict[str, Any], status: HealthStatus, message: str) -> None:
    health = statefulset_health(obj)
    assert (health.status, health.message) == (status, message)
    assert health_of(obj) == health


def test_replicas_default_to_one_and_deletion_is_progressing() -> None:
    obj = sts(replicas=1, readyReplicas=0)
    del obj["spec"]["replicas"]
    assert statefulset_health(obj).message == "Waiting for 1 pods to be ready..."
    gone = sts()
    gone["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert statefulset_health(gone).status is P and statefulset_health(gone).message == "Pending deletion"
    assert statefulset_health({"apiVersion": "apps/v1", "kind": "StatefulSet"}).status is P


def _pod(sts_obj: dict[str, Any], ordinal: int, revision: str, ready: bool) -> dict[str, Any]:
    pod = statefulset_plan.new_pod(sts_obj, {"metadata": {"name": revision}, "data": {}}, ordinal)
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return pod


def test_status_written_by_the_embedded_statefulset_controller_mid_upgrade_on_delete() -> None:
    """gitops-kd upgrades through OnDelete: one pod replaced, the other still at the old revision."""
    obj = sts(replicas=2, strategy=ON_DELETE)
    obj["spec"]["template"] = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": []}}
    obj["spec"]["selector"] = {"matchLabels": {"app": "x"}}
    old, new = {"metadata": {"name": "kdss-x-old"}}, {"metadata": {"name": "kdss-x-new"}}
    pods = [_pod(obj, 0, "kdss-x-new", True), _pod(obj, 1, "kdss-x-old", True)]
    obj["status"] = statefulset_plan.plan(obj, pods, set(), old, new, 0).status
    assert obj["status"]["updatedReplicas"] == 1 and obj["status"]["currentRevision"] == "kdss-x-old"
    assert statefulset_health(obj).status is P
    pods[1] = _pod(obj, 1, "kdss-x-new", True)
    done = copy.deepcopy(obj)
    done["status"] = statefulset_plan.plan(obj, pods, set(), old, new, 0).status
    # the StatefulSet controller never moves currentRevision under OnDelete; updatedReplicas tells
    assert done["status"]["currentRevision"] == "kdss-x-old"
    assert statefulset_health(done).status is H and statefulset_health(done).message == "statefulset has 2 ready pods"


def test_status_written_by_the_embedded_statefulset_controller_pod_not_ready() -> None:
    obj = sts(replicas=2, strategy=ROLLING_NO_PARTITION)
    obj["spec"]["template"] = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": []}}
    rev = {"metadata": {"name": "kdss-x-1"}}
    pods = [_pod(obj, 0, "kdss-x-1", True), _pod(obj, 1, "kdss-x-1", False)]
    obj["status"] = statefulset_plan.plan(obj, pods, set(), rev, rev, 0).status
    assert statefulset_health(obj).message == "Waiting for 1 pods to be ready..."
