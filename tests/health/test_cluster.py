"""object_healths / cluster_health: a KDCluster's objects with Missing rows for what KubeDirector names but
is absent, extras labelled with the cluster, and the aggregate."""

from __future__ import annotations

from typing import Any

from gitops_kd.health import Health, HealthStatus, aggregate, cluster_health, object_healths
from gitops_kd.health.cluster import ObjectHealth

H, P, D, M = HealthStatus.HEALTHY, HealthStatus.PROGRESSING, HealthStatus.DEGRADED, HealthStatus.MISSING


def meta(name: str, **labels: str) -> dict[str, Any]:
    return {"name": name, "namespace": "default", "labels": labels}


KDC = {
    "apiVersion": "kubedirector.hpe.com/v1beta1",
    "kind": "KubeDirectorCluster",
    "metadata": meta("web"),
    "spec": {"app": "hello"},
    "status": {
        "state": "configured",
        "clusterService": "kdhs-a",
        "roles": [
            {
                "id": "worker",
                "statefulSet": "kdss-w",
                "members": [
                    {
                        "pod": "kdss-w-0",
                        "service": "s-kdss-w-0",
                        "pvc": "p-kdss-w-0",
                        "state": "configured",
                        "stateDetail": {"lastKnownContainerState": "running"},
                    },
                    {
                        "pod": "kdss-w-1",
                        "service": "n/a",
                        "pvc": "p-kdss-w-1",
                        "state": "configured",
                        "stateDetail": {"lastKnownContainerState": "running"},
                    },
                ],
            }
        ],
    },
}
ROLLOUT = {
    "apiVersion": "gitops-kd.io/v1alpha1",
    "kind": "KDRollout",
    "metadata": {**meta("web"), "generation": 1},
    "spec": {"app": "hello", "targetVersion": "2.0.0"},
    "status": {
        "observedGeneration": 1,
        "phase": "Idle",
        "appVersion": "1.0.0",
        "conditions": [{"type": "Ready", "status": "True", "reason": "UpToDate", "message": "all members run 1.0.0"}],
    },
}
STS = {
    "metadata": meta("kdss-w"),
    "spec": {"replicas": 2, "updateStrategy": {"type": "OnDelete"}},
    "status": {"observedGeneration": 1, "readyReplicas": 2, "updatedReplicas": 2, "replicas": 2},
}
READY = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
PODS = [{"metadata": meta("kdss-w-0"), "status": READY}, {"metadata": meta("kdss-w-1"), "status": READY}]
SERVICES = [
    {"metadata": meta("s-kdss-w-0"), "spec": {"type": "ClusterIP"}},
    {"metadata": meta("kdhs-a"), "spec": {"type": "ClusterIP", "clusterIP": "None"}},
]
PVCS = [
    {"metadata": meta("p-kdss-w-0"), "status": {"phase": "Bound"}},
    {"metadata": meta("p-kdss-w-1"), "status": {"phase": "Bound"}},
]


def test_every_object_in_order_and_all_healthy() -> None:
    rows = object_healths(ROLLOUT, KDC, statefulsets=[STS], pods=PODS, services=SERVICES, pvcs=PVCS)
    assert [(r.kind, r.name, r.role) for r in rows] == [
        ("KDRollout", "web", ""),
        ("KubeDirectorCluster", "web", ""),
        ("StatefulSet", "kdss-w", "worker"),
        ("Pod", "kdss-w-0", "worker"),
        ("Pod", "kdss-w-1", "worker"),
        ("Service", "s-kdss-w-0", "worker"),
        ("Service", "kdhs-a", ""),
        ("PersistentVolumeClaim", "p-kdss-w-0", "worker"),
        ("PersistentVolumeClaim", "p-kdss-w-1", "worker"),
    ]
    assert all(r.health.status is H for r in rows), rows
    summary = cluster_health(ROLLOUT, KDC, statefulsets=[STS], pods=PODS, services=SERVICES, pvcs=PVCS)
    assert (summary.namespace, summary.name, summary.app) == ("default", "web", "hello")
    assert (summary.live_version, summary.target_version, summary.phase) == ("1.0.0", "2.0.0", "Idle")
    assert summary.health == Health(H, "all members run 1.0.0")
    assert summary.as_dict()["liveVersion"] == "1.0.0" and "objects" not in summary.as_dict()
    assert len(summary.as_dict(with_objects=True)["objects"]) == 9


def test_absent_objects_are_missing_and_extras_are_listed() -> None:
    extra = {
        "metadata": meta("kdss-w-2", **{"kubedirector.hpe.com/role": "worker"}),
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]},
    }
    rows = object_healths(ROLLOUT, KDC, statefulsets=[STS], pods=[PODS[0], extra], services=SERVICES, pvcs=PVCS[:1])
    found = {(r.kind, r.name): r for r in rows}
    assert found[("Pod", "kdss-w-1")].health == Health(M, "Pod kdss-w-1 not found")
    assert found[("PersistentVolumeClaim", "p-kdss-w-1")].health.status is M
    assert rows[-1] == ObjectHealth("Pod", "kdss-w-2", found[("Pod", "kdss-w-2")].health, "worker")
    assert rows[-1].health.status is P
    summary = cluster_health(ROLLOUT, KDC, statefulsets=[STS], pods=[PODS[0], extra], services=SERVICES, pvcs=PVCS[:1])
    assert summary.health == Health(M, "Pod kdss-w-1: Pod kdss-w-1 not found (and 1 more Missing)")


def test_an_orphaned_pvc_is_not_healthy() -> None:
    """A Bound PVC that no member uses (KubeDirector keeps a removed member's PVC) is listed Unknown, saying it is
    orphaned, never Healthy (issue 29, 9); the cluster's health does not fail on it."""
    orphan = {"metadata": meta("p-kdss-w-2", **{"kubedirector.hpe.com/role": "worker"}), "status": {"phase": "Bound"}}
    rows = object_healths(ROLLOUT, KDC, statefulsets=[STS], pods=PODS, services=SERVICES, pvcs=[*PVCS, orphan])
    found = {(r.kind, r.name): r for r in rows}
    assert found[("PersistentVolumeClaim", "p-kdss-w-2")].health.status is HealthStatus.UNKNOWN
    assert "orphaned" in found[("PersistentVolumeClaim", "p-kdss-w-2")].health.message
    assert found[("PersistentVolumeClaim", "p-kdss-w-0")].health.status is HealthStatus.HEALTHY


def test_no_rollout_or_no_kdcluster_is_missing() -> None:
    unmanaged = cluster_health(None, KDC, statefulsets=[STS], pods=PODS, services=SERVICES, pvcs=PVCS)
    assert unmanaged.health.status is M and unmanaged.health.message.startswith("no KDRollout: gitops-kd does not manage")
    orphan = cluster_health(ROLLOUT, None)
    assert orphan.health == Health(M, "KubeDirectorCluster web: KubeDirectorCluster web not found")
    assert orphan.app == "hello" and orphan.name == "web"


def test_aggregate_prefers_the_rollout_on_a_tie_and_names_the_worst_object() -> None:
    rollout = ObjectHealth("KDRollout", "web", Health(P, "upgrading hello"))
    pod = ObjectHealth("Pod", "kdss-w-0", Health(P, "ContainersNotReady"))
    bad = ObjectHealth("Pod", "kdss-w-1", Health(D, "CrashLoopBackOff: container app"))
    assert aggregate([rollout, pod]) == Health(P, "upgrading hello (and 1 more Progressing)")
    assert aggregate([rollout, pod, bad]) == Health(D, "Pod kdss-w-1: CrashLoopBackOff: container app")
    assert aggregate([]) == Health(H)


def test_a_member_replaced_by_an_upgrade_is_progressing_not_degraded() -> None:
    """Invariant: during an upgrade or downgrade the pod the rollout deleted (its container absent for
    KubeDirector, the pod not found) is Progressing; the same cluster Idle is Degraded / Missing."""
    kdc = {
        **KDC,
        "status": {
            **KDC["status"],
            "roles": [
                {
                    **KDC["status"]["roles"][0],
                    "members": [
                        KDC["status"]["roles"][0]["members"][0],
                        {**KDC["status"]["roles"][0]["members"][1], "stateDetail": {"lastKnownContainerState": "absent"}},
                    ],
                }
            ],
        },
    }
    for phase, expected in (("Downgrading", P), ("Upgrading", P), ("Idle", D)):
        rollout = {**ROLLOUT, "status": {**ROLLOUT["status"], "phase": phase}}
        rows = {
            (r.kind, r.name): r.health
            for r in object_healths(rollout, kdc, statefulsets=[STS], pods=PODS[:1], services=SERVICES, pvcs=PVCS)
        }
        assert rows[("KubeDirectorCluster", "web")].status is expected, (phase, rows)
        assert rows[("Pod", "kdss-w-1")].status is (P if expected is P else M), (phase, rows)
    rollout = {**ROLLOUT, "status": {**ROLLOUT["status"], "phase": "Downgrading"}}
    crashing = {
        "metadata": meta("kdss-w-1"),
        "status": {
            "phase": "Running",
            "containerStatuses": [{"name": "app", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
        },
    }
    summary = cluster_health(rollout, kdc, statefulsets=[STS], pods=[PODS[0], crashing], services=SERVICES, pvcs=PVCS)
    assert summary.health.status is D and "CrashLoopBackOff" in summary.health.message


def test_ondelete_pods_kept_at_an_earlier_template_are_healthy_once_the_rollout_is_ready() -> None:
    """Invariant: an Idle, Ready rollout whose StatefulSet keeps pods at an earlier template revision (gitops-kd's
    own template patch after a first deploy) is Healthy; the same StatefulSet during an upgrade is Progressing."""
    sts = {**STS, "status": {**STS["status"], "updatedReplicas": 0, "updateRevision": "kdss-w-2"}}
    idle = cluster_health(ROLLOUT, KDC, statefulsets=[sts], pods=PODS, services=SERVICES, pvcs=PVCS)
    assert idle.health.status is H, idle.health
    upgrading = {
        **ROLLOUT,
        "status": {
            **ROLLOUT["status"],
            "phase": "Upgrading",
            "conditions": [{"type": "Reconciling", "status": "True", "reason": "Upgrading", "message": "upgrading"}],
        },
    }
    rows = {r.kind: r.health for r in object_healths(upgrading, KDC, statefulsets=[sts], pods=PODS, services=SERVICES, pvcs=PVCS)}
    assert rows["StatefulSet"].status is P and "(OnDelete)" in rows["StatefulSet"].message


def test_a_pod_running_another_image_than_the_ready_version_is_degraded() -> None:
    """Invariant: Ready is what the pods run. A KDRollout Ready at 1.0.0 (status.images) does not make the cluster
    Healthy while a member runs 2.0.0's image: the pod row is Degraded and speaks for the cluster."""
    rollout = {**ROLLOUT, "status": {**ROLLOUT["status"], "images": {"worker": "hello:1.0.0"}}}
    pods = [
        {**p, "spec": {"containers": [{"name": "app", "image": image}]}} for p, image in zip(PODS, ("hello:1.0.0", "hello:2.0.0"))
    ]
    summary = cluster_health(rollout, KDC, statefulsets=[STS], pods=pods, services=SERVICES, pvcs=PVCS)
    assert summary.health == Health(D, "Pod kdss-w-1: runs hello:2.0.0, not hello:1.0.0 of version 1.0.0 the KDRollout is at")
    same = [{**p, "spec": {"containers": [{"name": "app", "image": "hello:1.0.0"}]}} for p in PODS]
    assert cluster_health(rollout, KDC, statefulsets=[STS], pods=same, services=SERVICES, pvcs=PVCS).health.status is H
