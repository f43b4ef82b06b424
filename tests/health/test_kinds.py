"""Service, PVC, KubeDirectorCluster and KDRollout health, health_of dispatch, and worst() ordering."""

from __future__ import annotations

from typing import Any

import pytest

from gitops_kd.health import (
    Health,
    HealthStatus,
    health_of,
    kdcluster_health,
    kdrollout_health,
    pvc_health,
    service_health,
    worst,
)
from kdsim.kubedirector import status as kd_status

H, P, D = HealthStatus.HEALTHY, HealthStatus.PROGRESSING, HealthStatus.DEGRADED
M, S, U = HealthStatus.MISSING, HealthStatus.SUSPENDED, HealthStatus.UNKNOWN


def service(kind: str, ingress: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s-kdss-x-0"},
        "spec": {"type": kind, "ports": [{"name": "ssh", "port": 22}]},
        "status": {"loadBalancer": {"ingress": ingress} if ingress is not None else {}},
    }


def pvc(phase: str | None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "p-kdss-x-0"},
        "spec": {"volumeName": "pv-1"},
        "status": {"phase": phase} if phase else {},
    }


@pytest.mark.parametrize(
    "obj, status",
    [
        (service("ClusterIP"), H),
        (service("NodePort"), H),
        (service("LoadBalancer"), P),
        (service("LoadBalancer", []), P),
        (service("LoadBalancer", [{"ip": "192.0.2.10"}]), H),
        (pvc("Bound"), H),
        (pvc("Pending"), P),
        (pvc("Lost"), D),
        (pvc(None), U),
    ],
)
def test_service_and_pvc(obj: dict[str, Any], status: HealthStatus) -> None:
    check = service_health if obj["kind"] == "Service" else pvc_health
    assert check(obj).status is status
    assert health_of(obj) == check(obj)


def member(pod: str, state: str, container: str = "running", **detail: Any) -> dict[str, Any]:
    return {
        "pod": pod,
        "service": "s-" + pod,
        "nodeID": 1,
        "state": state,
        "stateDetail": {"lastKnownContainerState": container, **detail},
    }


def kdcluster(state: str | None, *members: dict[str, Any], **status: Any) -> dict[str, Any]:
    roles = [{"id": "vanilla_centos", "statefulSet": "kdss-x", "members": list(members)}]
    body: dict[str, Any] = {}
    if state is not None:
        body = {
            "state": state,
            "memberStateRollup": kd_status.rollup(roles),
            "clusterService": "kdhs-y",
            "roles": roles,
            **status,
        }
    return {
        "apiVersion": "kubedirector.hpe.com/v1beta1",
        "kind": "KubeDirectorCluster",
        "metadata": {"name": "centos7", "namespace": "default"},
        "spec": {"app": "centos7x"},
        "status": body,
    }


@pytest.mark.parametrize(
    "obj, status, fragment",
    [
        (kdcluster(None), P, "Waiting for KubeDirector"),
        (kdcluster("configured", member("kdss-x-0", "configured")), H, "configured: 1 members ready"),
        (kdcluster("creating", member("kdss-x-0", "creating", "unresponsive")), P, "creating (creating: kdss-x-0)"),
        (
            kdcluster("updating", member("kdss-x-0", "configured"), member("kdss-x-1", "create pending", "absent")),
            P,
            "updating (create pending: kdss-x-1)",
        ),
        (kdcluster("spec modified", member("kdss-x-0", "configured")), P, "spec modified"),
        (
            kdcluster("configured", member("kdss-x-0", "config error", configErrorDetail="configure exited 3")),
            D,
            "members in config error: kdss-x-0 (configure exited 3)",
        ),
        (kdcluster("configured", member("kdss-x-0", "configured", "unresponsive")), D, "members down: kdss-x-0 (unresponsive)"),
        # issue 42: the live-app-upgrade branch left updating, a member's container unresponsive (its notify failed)
        (kdcluster("updating", member("kdss-x-0", "configured", "unresponsive")), D, "updating: members down: kdss-x-0"),
        (
            kdcluster("configured", member("kdss-x-0", "configured"), restoreProgress={"error": "no app"}),
            D,
            "restore failed: no app",
        ),
        (kdcluster("exploded", member("kdss-x-0", "configured")), U, "unknown KubeDirector cluster state 'exploded'"),
    ],
)
def test_kdcluster(obj: dict[str, Any], status: HealthStatus, fragment: str) -> None:
    health = kdcluster_health(obj)
    assert health.status is status and fragment in health.message, health
    assert health_of(obj) == health


def cond(kind: str, status: str, reason: str, message: str, generation: int = 2) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": "2024-01-01T00:00:00Z",
    }


def rollout(*conditions: dict[str, Any], generation: int = 2, observed: int = 2, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "gitops-kd.io/v1alpha1",
        "kind": "KDRollout",
        "metadata": {"name": "hello-dev", "namespace": "default", "generation": generation},
        "spec": {"app": "hello", "targetVersion": "2.0.0"},
        "status": {"observedGeneration": observed, "conditions": list(conditions), **status},
    }


READY = cond("Ready", "True", "UpgradeSucceeded", "all members run version 2.0.0")
NOT_READY = cond("Ready", "False", "Upgrading", "upgrading hello from 1.0.0 to 2.0.0")
RECONCILING = cond("Reconciling", "True", "Upgrading", "upgrading hello from 1.0.0 to 2.0.0 (commit abc)")
STALLED = cond("Stalled", "True", "PodNotReady", "pod kdss-x-0 not Ready within 300s")


@pytest.mark.parametrize(
    "obj, status, message",
    [
        (rollout(READY, phase="Idle"), H, "all members run version 2.0.0"),
        (
            rollout(NOT_READY, RECONCILING, phase="Upgrading", step="gating kdss-x-0"),
            P,
            "Upgrading: upgrading hello from 1.0.0 to 2.0.0 (commit abc) (step: gating kdss-x-0)",
        ),
        (
            rollout(NOT_READY, cond("Reconciling", "False", "Stalled", ""), STALLED, phase="Stalled"),
            D,
            "PodNotReady: pod kdss-x-0 not Ready within 300s",
        ),
        (rollout(phase="Stalled", stalledReason="StepFailed", message="hook exited 1"), D, "StepFailed: hook exited 1"),
        (rollout(READY, generation=3, observed=2), P, "Waiting for gitops-kd to observe generation 3 (observed 2)"),
        (
            rollout(cond("Ready", "True", "UpToDate", "ok", generation=1), phase="Idle"),
            P,
            "Ready condition is for generation 1, not 2",
        ),
        (rollout(NOT_READY), P, "Upgrading: upgrading hello from 1.0.0 to 2.0.0"),
        (rollout(), P, "Waiting for the Ready condition"),
    ],
)
def test_kdrollout(obj: dict[str, Any], status: HealthStatus, message: str) -> None:
    health = kdrollout_health(obj)
    assert (health.status, health.message) == (status, message)
    assert health_of(obj) == health


def test_kdrollout_without_status_waits_for_the_controller() -> None:
    obj = rollout()
    del obj["status"]
    assert kdrollout_health(obj) == Health(P, "Waiting for gitops-kd to report status")


def test_health_of_dispatch() -> None:
    assert health_of(None) == Health(M, "not found")
    assert health_of({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}).status is U
    assert health_of({"apiVersion": "example.com/v1", "kind": "StatefulSet"}).status is U  # group matters
    deleting = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}}
    assert health_of(deleting) == Health(P, "Pending deletion")


def test_worst_order() -> None:
    order = [H, U, S, P, M, D]
    for i, better in enumerate(order):
        for worse in order[i + 1 :]:
            assert worst([Health(better, "a"), Health(worse, "b")]).status is worse
            assert worst([Health(worse, "b"), Health(better, "a")]).status is worse
    assert worst([]) == Health(H)
    first, second = Health(P, "first"), Health(P, "second")
    assert worst([first, second]) is first
