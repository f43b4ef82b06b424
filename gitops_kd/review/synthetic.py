"""An observed state synthesized from a desired state: every cluster settled at its app's version (pure)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gitops_kd.constants import Phase
from gitops_kd.diff import app_for, app_manifest, cluster_manifest
from gitops_kd.kd import layout
from gitops_kd.observed import (
    ON_DELETE,
    ObservedApp,
    ObservedCluster,
    ObservedPod,
    ObservedRollout,
    ObservedService,
    ObservedState,
    ObservedStatefulSet,
)
from gitops_kd.render import owned_template, service_ports
from gitops_kd.spec.model import KDApp, KDCluster
from gitops_kd.spec.state import DesiredState, Key


def _revision(template: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]


def _cluster(desired: DesiredState, key: Key, cluster: KDCluster, app: KDApp) -> ObservedCluster:
    namespace, name = key
    statefulsets: dict[str, ObservedStatefulSet] = {}
    pods: dict[str, tuple[ObservedPod, ...]] = {}
    services: list[ObservedService] = []
    for role in cluster.roles:
        if role.id not in app.role_ids:
            continue
        app_role = app.role(role.id)
        template = owned_template(app, cluster, role.id, from_version=app.version, rules=None)
        revision = _revision(template)
        sts = f"{name}-{role.id}"
        members = role.members_for(app_role)
        statefulsets[role.id] = ObservedStatefulSet(
            sts, namespace, role.id, f"uid-{sts}", 1, 1, ON_DELETE, members, revision, revision, template, ready_replicas=members
        )
        names = [layout.member_pod_name(sts, i) for i in range(members)]
        pods[role.id] = tuple(
            ObservedPod(n, namespace, role.id, i, f"uid-{n}", revision, "Running", True, False, image=app_role.image or "")
            for i, n in enumerate(names)
        )
        ports = service_ports(app, role.id)
        services += [
            ObservedService(
                f"s-{n}", namespace, role.id, tuple(ports), {"spec": {"selector": {"statefulset.kubernetes.io/pod-name": n}}}
            )
            for n in names
            if ports
        ]
    rollout = ObservedRollout(
        name, namespace, f"uid-ro-{name}", 1, app.version, app.version, desired.commit, app.version, Phase.IDLE
    )
    raw = cluster_manifest(cluster, key)
    raw["status"] = {"state": "configured"}
    return ObservedCluster(
        namespace, name, f"uid-{name}", cluster.app, "configured", raw, statefulsets, pods, tuple(services), rollout
    )


def as_live(desired: DesiredState) -> ObservedState:
    """What the cluster would show once ``desired`` is fully applied: KDApps at their versions, every
    cluster configured, its pods Ready and running the templates gitops-kd renders for that version."""
    apps = {k: ObservedApp(k[0], k[1], a.version, a.upgrade, "1", app_manifest(a, k)) for k, a in desired.apps.items()}
    clusters = {
        k: _cluster(desired, k, c, found[1]) for k, c in desired.clusters.items() if (found := app_for(desired, k, c)) is not None
    }
    return ObservedState(apps, clusters)
