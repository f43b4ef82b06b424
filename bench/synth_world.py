"""Synthetic fleets for the benchmarks: desired state from spec text, and the in-sync observed state.

A fleet is `apps` KDApps (app-0000...) and `clusters` KDClusters (c-0000...); cluster j uses app
j // per_app, so the first ceil(clusters / per_app) apps have `per_app` clusters each and the
others none. Every cluster has a controller (1 member) and a worker role (`workers` members), both
with storage. The observed state is what KubeDirector and gitops-kd leave behind in steady state:
KubeDirector's StatefulSets (rendered by the embedded KubeDirector) with gitops-kd's owned fields
applied by the embedded apiserver's strategic merge, OnDelete, every pod Ready at the update
revision, member Services with the app's ports, and an Idle KDRollout at the app's version.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from synth_repo import app_name, app_yaml

from gitops_kd.diff import app_manifest, cluster_manifest
from gitops_kd.observe import (
    ObservedApp,
    ObservedCluster,
    ObservedPod,
    ObservedRollout,
    ObservedService,
    ObservedState,
    ObservedStatefulSet,
)
from gitops_kd.render import owned_template, service_ports, template_patch
from gitops_kd.source.model import DesiredState
from gitops_kd.spec import KDApp, KDCluster, load_manifests
from kdsim.kubedirector.model import parse_app, parse_cluster
from kdsim.kubedirector.render import render_statefulset
from kdsim.patch import apply_patch
from kubeplumb.names import STRATEGIC_PATCH

NS = "default"
T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
BASE_VERSION = "1.0.0"
NEW_VERSION = "2.0.0"


def cluster_name(j: int) -> str:
    return f"c-{j:04d}"


def upgradable_app_yaml(name: str, version: str) -> str:
    """app_yaml plus an upgrade stanza accepting every older 1.x version (keep all data)."""
    return (
        app_yaml(name, version)
        + """  upgrade:
    roleOrder: [controller, worker]
    from:
      - versions: ">=1.0.0 <2.0.0"
        default: keep
"""
    )


def cluster_yaml(name: str, app: str, workers: int) -> str:
    roles = "".join(
        f"""    - id: {rid}
      members: {members}
      resources:
        requests: {{cpu: 100m, memory: 128Mi}}
        limits: {{cpu: 500m, memory: 256Mi}}
      storage:
        size: 1Gi
"""
        for rid, members in (("controller", 1), ("worker", workers))
    )
    return f"""apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorCluster
metadata:
  name: {name}
  labels:
    gitops-kd.io/wave: "0"
spec:
  app: {app}
  roles:
{roles}"""


def load_one(path: str, text: str) -> Any:
    objs = load_manifests(path, text.encode())
    if len(objs) != 1:
        raise ValueError(f"{path}: expected one object, got {len(objs)}")
    return objs[0]


def fleet_files(apps: int, clusters: int, per_app: int, workers: int) -> dict[str, str]:
    """Repo path -> spec text of the fleet (apps/app-NNNN.yaml, clusters/c-NNNN.yaml); apps at BASE_VERSION."""
    if clusters > apps * per_app:
        raise ValueError(f"{clusters} clusters need at least {-(-clusters // per_app)} apps at {per_app} per app")
    files = {f"apps/{app_name(i)}.yaml": app_yaml(app_name(i), BASE_VERSION) for i in range(apps)}
    files.update(
        {
            f"clusters/{cluster_name(j)}.yaml": cluster_yaml(cluster_name(j), app_name(j // per_app), workers)
            for j in range(clusters)
        }
    )
    return files


def desired_from_files(files: dict[str, str], commit: str = "c1") -> DesiredState:
    """The desired state of spec files (every object in the default namespace)."""
    objs = [load_one(path, text) for path, text in sorted(files.items())]
    return DesiredState(
        commit,
        {(NS, o.name): o for o in objs if isinstance(o, KDApp)},
        {(NS, o.name): o for o in objs if isinstance(o, KDCluster)},
    )


def desired_fleet(apps: int, clusters: int, per_app: int, workers: int, *, commit: str = "c1") -> DesiredState:
    """The desired state of the fleet; every app at BASE_VERSION."""
    return desired_from_files(fleet_files(apps, clusters, per_app, workers), commit)


def with_app_changed(desired: DesiredState, index: int = 0, version: str = NEW_VERSION) -> DesiredState:
    """The same fleet with app `index` at `version` (with an upgrade stanza from 1.x), new commit."""
    name = app_name(index)
    changed = load_one(f"apps/{name}.yaml", upgradable_app_yaml(name, version))
    return DesiredState(desired.commit + "-changed", {**desired.apps, (NS, name): changed}, desired.clusters)


def clusters_of(desired: DesiredState, index: int) -> set[tuple[str, str]]:
    """Keys of the desired clusters using app `index`."""
    return {k for k, c in desired.clusters.items() if c.app == app_name(index)}


def revision_of(template: Any) -> str:
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]


def kd_view(app: KDApp, cluster: KDCluster, cluster_uid: str) -> tuple[Any, Any]:
    """(app, cluster) as the embedded KubeDirector models them, for its renderers."""
    sim_app = parse_app({**app.body, "metadata": {"name": app.name, "namespace": NS}})
    doc = cluster.body
    doc["metadata"] = {"name": cluster.name, "namespace": NS, "uid": cluster_uid}
    return sim_app, parse_cluster(doc, sim_app)


def live_statefulset(
    app: KDApp, cluster: KDCluster, role_id: str, members: int, *, cluster_uid: str | None = None
) -> dict[str, Any]:
    """KubeDirector's StatefulSet for the role with gitops-kd's owned template fields patched in (and OnDelete)."""
    sim_app, sim_cluster = kd_view(app, cluster, cluster_uid or "uid-" + cluster.name)
    sts = render_statefulset(
        sim_cluster,
        sim_app,
        sim_cluster.role(role_id),
        cluster_service=f"kdhs-{cluster.name}",
        name=f"kdss-{cluster.name}-{role_id}",
        replicas=members,
    )
    owned = owned_template(app, cluster, role_id, from_version=app.version, rules=None)
    patch = template_patch(sts["spec"]["template"], owned)
    if patch is not None:
        body = json.dumps({"spec": {"template": patch, "updateStrategy": {"type": "OnDelete"}}}).encode()
        sts = apply_patch(sts, body, STRATEGIC_PATCH, kind="StatefulSet", api_version="apps/v1")
    return sts


def live_cluster(app: KDApp, cluster: KDCluster) -> ObservedCluster:
    sets: dict[str, ObservedStatefulSet] = {}
    pods: dict[str, tuple[ObservedPod, ...]] = {}
    services: list[ObservedService] = []
    for role in cluster.roles:
        members = role.members_for(app.role(role.id))
        raw = live_statefulset(app, cluster, role.id, members)
        rev = revision_of(raw["spec"]["template"])
        name = raw["metadata"]["name"]
        sets[role.id] = ObservedStatefulSet(
            name, NS, role.id, "uid-" + name, 2, 2, "OnDelete", members, rev, rev, raw["spec"]["template"], raw, members
        )
        born = T0 - timedelta(hours=1)
        pods[role.id] = tuple(
            ObservedPod(
                f"{name}-{i}", NS, role.id, i, f"uid-{name}-{i}", rev, "Running", True, False, born, born, f"10.0.{len(sets)}.{i}"
            )
            for i in range(members)
        )
        ports = service_ports(app, role.id)
        for i in range(members if ports else 0):
            pod = f"{name}-{i}"
            services.append(
                ObservedService(
                    f"s-{pod}", NS, role.id, tuple(ports), {"spec": {"selector": {"statefulset.kubernetes.io/pod-name": pod}}}
                )
            )
    rollout = ObservedRollout(cluster.name, NS, "uid-ro-" + cluster.name, 1, app.version, app.version, "c0", app.version, "Idle")
    raw_cluster = cluster_manifest(cluster, (NS, cluster.name))
    raw_cluster["status"] = {"state": "configured"}
    return ObservedCluster(
        NS, cluster.name, "uid-" + cluster.name, cluster.app, "configured", raw_cluster, sets, pods, tuple(services), rollout
    )


def observed_in_sync(desired: DesiredState) -> ObservedState:
    """What the cluster looks like once `desired` is fully applied and every rollout is finished."""
    apps = {k: ObservedApp(NS, a.name, a.version, a.upgrade, "1", app_manifest(a, k)) for k, a in desired.apps.items()}
    clusters = {k: live_cluster(desired.apps[(NS, c.app)], c) for k, c in desired.clusters.items()}
    return ObservedState(apps, clusters)
