"""Seed a bare embedded API server (no simulated controllers) with a fleet already in sync with Git.

Creates, through the API, what KubeDirector, the StatefulSet controller, the kubelet and gitops-kd
would have left after applying the desired state and finishing every rollout: the KDApps and
KDClusters as gitops-kd applies them (digest annotations), KubeDirector's role StatefulSets (OnDelete,
owned fields patched in, status at the update revision), Ready member pods labelled with that
revision, member Services, and an Idle KDRollout per cluster. Writing the status of each object stands
in for the controllers that are not running.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from synth_world import NS, kd_view, live_statefulset

from gitops_kd.diff import app_manifest, cluster_manifest
from gitops_kd.source.model import DesiredState
from gitops_kd.spec import KDApp, KDCluster
from kdsim.controllers.revisions import build_revision
from kdsim.controllers.statefulset_plan import new_pod
from kdsim.kubedirector.render import render_member_service
from kubeplumb.rest import RestClient

KD = "kubedirector.hpe.com/v1beta1"
ROLLOUT = "gitops-kd.io/v1alpha1"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def seed_fleet(rest: RestClient, desired: DesiredState, *, commit: str = "seed") -> int:
    """Create every object of the in-sync fleet (its KDRollouts recording ``commit``: the repository's real one when
    a controller with its instance record adopts the fleet); returns how many objects were created."""
    created = 0
    for key, app in sorted(desired.apps.items()):
        rest.create(KD, "kubedirectorapps", NS, app_manifest(app, key))
        created += 1
    for key, cluster in sorted(desired.clusters.items()):
        created += seed_cluster(rest, desired.apps[(NS, cluster.app)], cluster, key, commit)
    return created


def seed_cluster(rest: RestClient, app: KDApp, cluster: KDCluster, key: tuple[str, str], commit: str = "seed") -> int:
    """One KDCluster with its StatefulSets, pods, member Services and KDRollout; returns the objects created."""
    live = rest.create(KD, "kubedirectorclusters", NS, cluster_manifest(cluster, key))
    live["status"] = {"state": "configured"}
    live = rest.replace(KD, "kubedirectorclusters", NS, cluster.name, live, subresource="status")
    uid = live["metadata"]["uid"]
    created = 1
    sim_app, sim_cluster = kd_view(app, cluster, uid)
    for role in cluster.roles:
        members = role.members_for(app.role(role.id))
        sts = rest.create("apps/v1", "statefulsets", NS, live_statefulset(app, cluster, role.id, members, cluster_uid=uid))
        revision = build_revision(sts, 1, None)
        rev = revision["metadata"]["name"]
        sts["status"] = {
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": members,
            "readyReplicas": members,
            "currentReplicas": members,
            "updatedReplicas": members,
            "availableReplicas": members,
            "currentRevision": rev,
            "updateRevision": rev,
            "collisionCount": 0,
        }
        rest.replace("apps/v1", "statefulsets", NS, sts["metadata"]["name"], sts, subresource="status")
        created += 1
        for ordinal in range(members):
            pod = rest.create("v1", "pods", NS, new_pod(sts, revision, ordinal))
            pod["status"] = _running(ordinal, len(sts["metadata"]["name"]))
            rest.replace("v1", "pods", NS, pod["metadata"]["name"], pod, subresource="status")
            created += 1
            service = render_member_service(sim_cluster, sim_app, sim_cluster.role(role.id), pod["metadata"]["name"])
            if service is not None:
                rest.create("v1", "services", NS, service)
                created += 1
    rest.create(ROLLOUT, "kdrollouts", NS, _rollout(app, cluster, live, commit))
    ro = rest.get(ROLLOUT, "kdrollouts", NS, cluster.name)
    ro["status"] = {
        "observedGeneration": ro["metadata"].get("generation", 1),
        "appVersion": app.version,
        "fromVersion": app.version,
        "targetVersion": app.version,
        "commit": commit,
        "phase": "Idle",
        "direction": "adopt",
        "conditions": _ready_conditions(ro["metadata"].get("generation", 1)),
    }
    rest.replace(ROLLOUT, "kdrollouts", NS, cluster.name, ro, subresource="status")
    return created + 1


def _running(ordinal: int, salt: int) -> dict[str, Any]:
    now = _now()
    return {
        "phase": "Running",
        "podIP": f"10.{salt % 250}.{ordinal // 250}.{ordinal % 250 + 1}",
        "startTime": now,
        "conditions": [
            {"type": t, "status": "True", "lastTransitionTime": now}
            for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
        ],
    }


def _rollout(app: KDApp, cluster: KDCluster, live: dict[str, Any], commit: str) -> dict[str, Any]:
    return {
        "apiVersion": ROLLOUT,
        "kind": "KDRollout",
        "metadata": {
            "name": cluster.name,
            "namespace": NS,
            "ownerReferences": [
                {
                    "apiVersion": KD,
                    "kind": "KubeDirectorCluster",
                    "name": cluster.name,
                    "uid": live["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"app": app.name, "targetVersion": app.version, "commit": commit},
    }


def _ready_conditions(generation: int) -> list[dict[str, Any]]:
    now = _now()
    base = {"observedGeneration": generation, "lastTransitionTime": now}
    return [
        {**base, "type": "Ready", "status": "True", "reason": "Current", "message": "every pod runs the app version"},
        {**base, "type": "Reconciling", "status": "False", "reason": "Current", "message": ""},
        {**base, "type": "Stalled", "status": "False", "reason": "Current", "message": ""},
    ]
