"""Test worlds for diff/plan: desired states from real spec files, observed states built by hand, and a
small model of the cluster that applies planned actions (the StatefulSet controller + kubelet + executor
reduced to their effect on observed state), used to run whole rollouts through the planner."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from gitops_kd.constants import UPGRADE_ANNOTATION
from gitops_kd.diff import app_manifest, cluster_manifest
from gitops_kd.observe import (
    ObservedApp,
    ObservedCluster,
    ObservedPod,
    ObservedRollout,
    ObservedService,
    ObservedState,
    ObservedStatefulSet,
    PodProgress,
)
from gitops_kd.plan import actions as A
from gitops_kd.render import owned_template, service_ports, template_patch
from gitops_kd.rollout.model import Stage
from gitops_kd.rollout.reach import container_ports
from gitops_kd.source.model import DesiredState
from gitops_kd.spec import KDApp, KDCluster, UpgradeSpec, load_manifests
from gitops_kd.spec.freeze import thaw
from kdsim.kubedirector.model import parse_app, parse_cluster
from kdsim.kubedirector.render import render_statefulset
from kdsim.patch import strategic_merge
from kdsim.patch.schemas import schema_for

ROOT = Path(__file__).resolve().parents[2]
REPO = ROOT / "repo-template"
NS = "default"
T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def load_file(path: Path, rel: str | None = None) -> list[Any]:
    return load_manifests(rel or path.name, path.read_bytes())


def load_text(rel: str, doc: dict[str, Any]) -> Any:
    return load_manifests(rel, yaml.safe_dump(doc).encode())[0]


HELLO1: KDApp = load_file(REPO / "apps/hello.yaml", "apps/hello.yaml")[0]
HELLO2: KDApp = load_file(REPO / "examples/hello-2.0.0.yaml", "apps/hello.yaml")[0]
HELLO_DEV: KDCluster = load_file(REPO / "clusters/hello-dev.yaml", "clusters/hello-dev.yaml")[0]


def desired(*objs: KDApp | KDCluster, commit: str = "c1") -> DesiredState:
    apps = {(o.namespace or NS, o.name): o for o in objs if isinstance(o, KDApp)}
    clusters = {(o.namespace or NS, o.name): o for o in objs if isinstance(o, KDCluster)}
    return DesiredState(commit, apps, clusters)


def revision_of(template: Any) -> str:
    return hashlib.sha256(json.dumps(thaw(template), sort_keys=True).encode()).hexdigest()[:10]


def apply_template_patch(template: Any, patch: dict[str, Any]) -> dict[str, Any]:
    sts = {"spec": {"template": thaw(template)}}
    return strategic_merge(sts, {"spec": {"template": copy.deepcopy(patch)}}, schema_for("StatefulSet"))["spec"]["template"]


def kd_template(app: KDApp, cluster: KDCluster, role: str) -> dict[str, Any]:
    """The pod template KubeDirector (the embedded cluster's renderer) creates for the role."""
    sim_app = parse_app({**app.body, "metadata": {"name": app.name, "namespace": NS}})
    cdoc = cluster.body
    cdoc["metadata"] = {"name": cluster.name, "namespace": NS, "uid": "uid-" + cluster.name}
    sim_cluster = parse_cluster(cdoc, sim_app)
    return render_statefulset(sim_cluster, sim_app, sim_cluster.role(role), cluster_service="kdhs-x", name=f"kdss-{role}")[
        "spec"
    ]["template"]


def live_app(app: KDApp) -> ObservedApp:
    return ObservedApp(NS, app.name, app.version, app.upgrade, "1", app_manifest(app, (NS, app.name)))


def live_cluster(
    app: KDApp,
    cluster: KDCluster,
    *,
    managed: bool = True,
    from_version: str | None = None,
    rollout: bool = True,
    ready: bool = True,
    ports_version: KDApp | None = None,
) -> ObservedCluster:
    """A running cluster of ``app``: KubeDirector's objects, taken over by gitops-kd when ``managed``
    (OnDelete, owned template fields at ``app.version`` with ``from_version``, Idle rollout)."""
    sts_map: dict[str, ObservedStatefulSet] = {}
    pods: dict[str, tuple[ObservedPod, ...]] = {}
    services: list[ObservedService] = []
    for role in cluster.roles:
        template = kd_template(app, cluster, role.id)
        if managed:
            owned = owned_template(app, cluster, role.id, from_version=from_version or app.version, rules=None)
            patch = template_patch(template, owned)
            template = apply_template_patch(template, patch) if patch else template
        rev = revision_of(template)
        name = f"kdss-{role.id}"
        members = role.members_for(app.role(role.id))
        sts_map[role.id] = ObservedStatefulSet(
            name, NS, role.id, "uid-" + name, 2, 2, "OnDelete" if managed else "RollingUpdate", members, rev, rev, template
        )
        pods[role.id] = tuple(
            ObservedPod(
                f"{name}-{i}",
                NS,
                role.id,
                i,
                f"uid-{name}-{i}-0",
                rev,
                "Running",
                ready,
                False,
                T0 - timedelta(hours=1),
                T0 - timedelta(hours=1),
                f"10.0.0.{i}",
                ports=app_ports(template),
            )
            for i in range(members)
        )
        for i in range(members):
            ports = service_ports(ports_version or app, role.id)
            if ports:
                pod_name = f"{name}-{i}"
                services.append(
                    ObservedService(
                        f"s-{pod_name}",
                        NS,
                        role.id,
                        tuple(ports),
                        {"spec": {"selector": {"statefulset.kubernetes.io/pod-name": pod_name}}},
                    )
                )
    ro = None
    if managed and rollout:
        ro = ObservedRollout(
            cluster.name, NS, "uid-ro-" + cluster.name, 1, app.version, from_version or app.version, "c0", app.version, "Idle"
        )
    raw = cluster_manifest(cluster, (NS, cluster.name))
    raw["status"] = {"state": "configured"}
    return ObservedCluster(
        NS, cluster.name, "uid-" + cluster.name, cluster.app, "configured", raw, sts_map, pods, tuple(services), ro
    )


def observed(apps: tuple[KDApp, ...], clusters: tuple[ObservedCluster, ...]) -> ObservedState:
    return ObservedState({(NS, a.name): live_app(a) for a in apps}, {(NS, c.name): c for c in clusters})


def app_ports(template: Any) -> tuple[tuple[str, int], ...]:
    """The (name, containerPort) pairs of a pod template's app container: what a pod made from it listens on."""
    containers = (template.get("spec") or {}).get("containers") or ()
    return next((container_ports(c) for c in containers if c.get("name") == "app"), ())


# --- editing an observed cluster ---------------------------------------------------------------------------------
def with_pod(c: ObservedCluster, name: str, **changes: Any) -> ObservedCluster:
    pods = {r: tuple(replace(p, **changes) if p.name == name else p for p in ps) for r, ps in c.pods.items()}
    return replace(c, pods=pods)


def with_rollout(c: ObservedCluster, **changes: Any) -> ObservedCluster:
    assert c.rollout is not None
    return replace(c, rollout=replace(c.rollout, **changes))


def set_cluster(state: ObservedState, c: ObservedCluster) -> ObservedState:
    return replace(state, clusters={**state.clusters, c.key: c})


# --- a model of the cluster that carries out actions --------------------------------------------------------------
@dataclass
class FakeCluster:
    """Applies actions to an ObservedState as the executor + Kubernetes would; ``tick`` lets time pass."""

    state: ObservedState
    now: datetime = T0
    gate_failures: int = 0  # CheckGate fails this many times before passing
    log: list[str] = field(default_factory=list)
    pod_generation: int = 0

    def cluster(self, key: tuple[str, str]) -> ObservedCluster:
        return self.state.clusters[key]

    def put(self, c: ObservedCluster) -> None:
        self.state = set_cluster(self.state, c)

    def apply(self, action: A.Action) -> None:
        self.log.append(action.describe())
        handler = getattr(self, "_" + type(action).__name__)
        handler(action)

    def _ApplyApp(self, a: A.ApplyApp) -> None:
        body = a.body
        ann = (body.get("metadata", {}).get("annotations") or {}).get(UPGRADE_ANNOTATION)
        live = ObservedApp(
            a.namespace, a.name, body["spec"]["version"], UpgradeSpec.from_annotation(ann) if ann else None, "2", body
        )
        self.state = replace(self.state, apps={**self.state.apps, (a.namespace, a.name): live})

    def _ApplyCluster(self, a: A.ApplyCluster) -> None:
        raise AssertionError("this model does not create clusters")

    def _EnsureRollout(self, a: A.EnsureRollout) -> None:
        c = self.cluster(a.cluster_key)
        old = c.rollout
        adopt = a.direction == A.ADOPT
        phase = "Idle" if adopt else "Downgrading" if a.direction == A.DOWNGRADE else "Upgrading"
        self.put(
            replace(
                c,
                rollout=ObservedRollout(
                    a.cluster,
                    a.namespace,
                    old.uid if old else "uid-ro",
                    (old.generation + 1) if old else 1,
                    a.target_version,
                    a.from_version,
                    a.commit,
                    a.target_version if adopt else (old.app_version if old else a.from_version),
                    phase,
                    from_upgrade=UpgradeSpec.from_annotation(a.from_stanza) if a.from_stanza else None,
                    target_upgrade=UpgradeSpec.from_annotation(a.target_stanza) if a.target_stanza else None,
                    direction=a.direction,
                    conditions=(
                        {
                            "type": "Ready",
                            "status": "True" if adopt and a.members_ready else "False",
                            "lastTransitionTime": self.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                        },
                        *(({"type": "Reconciling", "status": "True"},) if adopt and not a.members_ready else ()),
                    ),
                ),
            )
        )

    def _SetOnDelete(self, a: A.SetOnDelete) -> None:
        c = self.cluster(a.cluster_key)
        sts = replace(c.statefulsets[a.role], update_strategy="OnDelete")
        self.put(replace(c, statefulsets={**c.statefulsets, a.role: sts}))

    def _PatchTemplate(self, a: A.PatchTemplate) -> None:
        c = self.cluster(a.cluster_key)
        sts = c.statefulsets[a.role]
        template = apply_template_patch(sts.template, a.patch_body["spec"]["template"])
        new = replace(
            sts,
            template=template,
            update_revision=revision_of(template),
            generation=sts.generation + 1,
            observed_generation=sts.generation + 1,
        )
        self.put(replace(c, statefulsets={**c.statefulsets, a.role: new}))

    def _PatchServicePorts(self, a: A.PatchServicePorts) -> None:
        c = self.cluster(a.cluster_key)
        services = tuple(replace(s, ports=a.ports) if s.name == a.service else s for s in c.services)
        self.put(replace(c, services=services))

    def _DeletePod(self, a: A.DeletePod) -> None:
        c = self.cluster(a.cluster_key)
        assert c.pod(a.pod) is not None and c.pod(a.pod).uid == a.uid, f"uid precondition failed for {a.pod}"
        self.put(with_pod(c, a.pod, deleting=True, ready=False))

    def _progress(self, c: ObservedCluster, pod: str, **changes: Any) -> ObservedCluster:
        ro = c.rollout
        assert ro is not None
        current = ro.pods.get(pod) or PodProgress(c.pod(pod).revision)
        return replace(c, rollout=replace(ro, pods={**ro.pods, pod: replace(current, **changes)}))

    def _RecordStages(self, a: A.RecordStages) -> None:
        c = self.cluster(a.cluster_key)
        ro = c.rollout
        assert ro is not None
        pods = {**ro.pods, **{pod: replace(ro.pods.get(pod) or PodProgress(), stage=Stage(stage)) for pod, stage in a.stages}}
        self.put(replace(c, rollout=replace(ro, pods=pods)))

    def _RunStep(self, a: A.RunStep) -> None:
        c = self.cluster(a.cluster_key)
        assert c.pod(a.pod).up, f"step {a.step_id} run in a pod that is not Ready"
        progress = c.rollout.pods.get(a.pod) if c.rollout else None
        if a.kind == A.HOOK_STEP:
            self.put(self._progress(c, a.pod, hook_done=True))
        else:
            done = (progress.migrations_done if progress else ()) + (a.step_id,)
            self.put(self._progress(c, a.pod, migrations_done=done))

    def _StartGate(self, a: A.StartGate) -> None:
        self.put(with_rollout(self.cluster(a.cluster_key), current_pod=a.pod, gate_started_at=self.now, gate_checked_at=None))

    def _CheckGate(self, a: A.CheckGate) -> None:
        c = with_rollout(self.cluster(a.cluster_key), gate_checked_at=self.now)
        if self.gate_failures > 0:
            self.gate_failures -= 1
            self.put(c)
        else:
            self.put(self._progress(c, a.pod, gate_passed=True))

    def _FinishRollout(self, a: A.FinishRollout) -> None:
        ready = {"type": "Ready", "status": "True", "lastTransitionTime": self.now.strftime("%Y-%m-%dT%H:%M:%SZ")}
        self.put(
            with_rollout(
                self.cluster(a.cluster_key),
                phase="Idle",
                app_version=a.version,
                current_pod=None,
                gate_started_at=None,
                conditions=(ready,),
            )
        )

    def _Stall(self, a: A.Stall) -> None:
        self.put(with_rollout(self.cluster(a.cluster_key), phase="Stalled", stalled_reason=a.reason))

    def _HandleFailure(self, a: A.HandleFailure) -> None:
        c = self.cluster(a.cluster_key)
        raw = thaw(c.rollout.raw) if c.rollout.raw else {}
        raw.setdefault("status", {})["failure"] = {"commit": a.commit, "reason": a.reason, "policy": a.policy}
        self.put(with_rollout(c, raw=raw))

    def _NoteStep(self, a: A.NoteStep) -> None:
        c = self.cluster(a.cluster_key)
        raw = thaw(c.rollout.raw) if c.rollout.raw else {}
        raw.setdefault("status", {})["step"] = a.step
        self.put(with_rollout(c, raw=raw))

    def _RecordUnreachable(self, a: A.RecordUnreachable) -> None:
        c = self.cluster(a.cluster_key)
        raw = thaw(c.rollout.raw) if c.rollout.raw else {}
        raw.setdefault("status", {})["unreachable"] = [m.to_obj() for m in a.members]
        self.put(with_rollout(c, raw=raw))

    def _Wait(self, a: A.Wait) -> None:
        self.tick(a.requeue_after_seconds)

    def tick(self, seconds: float) -> None:
        """Time passes: deleted pods come back at the update revision (not Ready), new pods become Ready."""
        self.now += timedelta(seconds=seconds)
        for c in self.state.clusters.values():
            pods: dict[str, tuple[ObservedPod, ...]] = {}
            for role, ps in c.pods.items():
                sts = c.statefulsets[role]
                new = []
                for p in ps:
                    if p.deleting:
                        self.pod_generation += 1
                        p = replace(
                            p,
                            uid=f"uid-{p.name}-{self.pod_generation}",
                            revision=sts.update_revision,
                            ports=app_ports(sts.template),
                            deleting=False,
                            ready=False,
                            created_at=self.now,
                            ready_since=None,
                        )
                    elif not p.ready:
                        p = replace(p, ready=True, ready_since=self.now)
                    new.append(p)
                pods[role] = tuple(new)
            self.put(replace(c, pods=pods))

    def down(self, key: tuple[str, str]) -> list[str]:
        return [p.name for p in self.cluster(key).all_pods() if not p.up]
