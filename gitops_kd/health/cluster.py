"""The health of one managed KDCluster: each of its objects (KDRollout, KDCluster, StatefulSets, Pods,
member Services, PVCs) and their aggregate, and the members unreachable through their own Service
(health/reach.py), from already-fetched objects (pure)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gitops_kd.constants import ROLLOUT_KIND, Phase
from gitops_kd.health._fields import items, section, text
from gitops_kd.health.kdcluster import MEMBERS_DOWN, kdcluster_health
from gitops_kd.health.kdrollout import kdrollout_health
from gitops_kd.health.model import Health, HealthStatus, worst
from gitops_kd.health.pod import pod_health
from gitops_kd.health.pvc import pvc_health
from gitops_kd.health.reach import reach_health, unreachable_members, worse
from gitops_kd.health.service import service_health
from gitops_kd.health.statefulset import ON_DELETE_WAITING, statefulset_health
from gitops_kd.kd.layout import APP_CONTAINER, KDCLUSTER_KIND, ROLE_LABEL
from gitops_kd.rollout.model import RolloutStatus, Unreachable

Obj = Mapping[str, Any]
NO_SERVICE = "n/a"  # KubeDirector's member.service when the role exposes no port
REPLACING_PHASES = (Phase.UPGRADING, Phase.DOWNGRADING)  # a rollout replacing members one at a time


@dataclass(frozen=True)
class ObjectHealth:
    """One row: an object of the cluster, its role (if any) and its health (Missing when expected but absent)."""

    kind: str
    name: str
    health: Health
    role: str = ""
    stage: str = ""  # a Pod's stage in the rollout as the planner recorded it (status.pods[pod].stage)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "role": self.role or None,
            "stage": self.stage or None,
            **self.health.as_dict(),
        }


@dataclass(frozen=True)
class ClusterHealth:
    """A managed KDCluster: versions and phase from its KDRollout, the aggregated health and every object's."""

    namespace: str
    name: str
    app: str
    live_version: str
    target_version: str
    phase: str
    health: Health
    objects: tuple[ObjectHealth, ...] = field(default=())
    unreachable: tuple[Unreachable, ...] = ()  # members whose own Service targets ports their pod does not serve

    def as_dict(self, *, with_objects: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "namespace": self.namespace,
            "name": self.name,
            "app": self.app,
            "liveVersion": self.live_version or None,
            "targetVersion": self.target_version or None,
            "phase": self.phase or None,
            **self.health.as_dict(),
            "unreachable": [u.to_obj() for u in self.unreachable],
        }
        if with_objects:
            out["objects"] = [o.as_dict() for o in self.objects]
        return out


def _name(obj: Obj) -> str:
    return text(section(obj, "metadata"), "name")


def _by_name(objs: Iterable[Obj]) -> dict[str, Obj]:
    return {_name(o): o for o in objs}


ORPHAN_PVC = Health(
    HealthStatus.UNKNOWN,
    "orphaned: no member of the KDCluster uses it (KubeDirector keeps a "
    "removed member's PVC and its data); delete it once the data is not needed",
)


def _rows(
    kind: str, wanted: Sequence[tuple[str, str]], present: dict[str, Obj], check: Callable[[Obj], Health], unreadable: str = ""
) -> list[ObjectHealth]:
    """A row per wanted (name, role): its health, or Missing; names listed twice appear once. `unreadable`: the
    kind's plural when the reader may not list it (RBAC 403): an absent object is then Unknown, never Missing."""
    rows, seen = [], set()
    for name, role in wanted:
        if not name or name in seen:
            continue
        seen.add(name)
        obj = present.get(name)
        if obj is not None:
            health = check(obj)
        elif unreadable:
            health = Health(HealthStatus.UNKNOWN, f"not readable: RBAC does not allow listing {unreadable}")
        else:
            health = Health(HealthStatus.MISSING, f"{kind} {name} not found")
        rows.append(ObjectHealth(kind, name, health, role))
    return rows


def object_healths(
    rollout: Obj | None,
    kdcluster: Obj | None,
    *,
    statefulsets: Iterable[Obj] = (),
    pods: Iterable[Obj] = (),
    services: Iterable[Obj] = (),
    pvcs: Iterable[Obj] = (),
    unreadable: Collection[str] = (),
) -> tuple[ObjectHealth, ...]:
    """Rows for the KDRollout, the KDCluster, then per role its StatefulSet, member Pods, member Services and
    PVCs (Missing when KubeDirector's status names one that is absent, Unknown when its kind's plural is in
    `unreadable`: the reader may not list it), the headless Service, and last any other object passed in
    (labelled with the cluster but not named in its status)."""
    name = _name(kdcluster or {}) or _name(rollout or {})
    rows = [
        ObjectHealth(
            ROLLOUT_KIND,
            name,
            kdrollout_health(rollout)
            if rollout is not None
            else Health(HealthStatus.MISSING, "no KDRollout: gitops-kd does not manage this cluster"),
        ),
        ObjectHealth(
            KDCLUSTER_KIND,
            name,
            kdcluster_health(kdcluster)
            if kdcluster is not None
            else Health(HealthStatus.MISSING, f"KubeDirectorCluster {name} not found"),
        ),
    ]
    kinds: tuple[tuple[str, dict[str, Obj], Callable[[Obj], Health]], ...] = (
        ("StatefulSet", _by_name(statefulsets), statefulset_health),
        ("Pod", _by_name(pods), pod_health),
        ("Service", _by_name(services), service_health),
        ("PersistentVolumeClaim", _by_name(pvcs), pvc_health),
    )
    plurals = ("statefulsets", "pods", "services", "persistentvolumeclaims")
    sts: list[tuple[str, str]] = []
    pod: list[tuple[str, str]] = []
    svc: list[tuple[str, str]] = []
    pvc: list[tuple[str, str]] = []
    status = section(kdcluster, "status")
    for role in items(status, "roles"):
        role_id = text(role, "id")
        sts.append((text(role, "statefulSet"), role_id))
        for member in items(role, "members"):
            pod.append((text(member, "pod"), role_id))
            if text(member, "service") != NO_SERVICE:
                svc.append((text(member, "service"), role_id))
            pvc.append((text(member, "pvc"), role_id))
    svc.append((text(status, "clusterService"), ""))
    for (kind, present, check), wanted, plural in zip(kinds, (sts, pod, svc, pvc), plurals):
        rows.extend(_rows(kind, wanted, present, check, plural if plural in unreadable else ""))
    listed = {(r.kind, r.name) for r in rows}
    for kind, present, check in kinds:
        for extra in sorted(n for n in present if (kind, n) not in listed):
            health = ORPHAN_PVC if kind == "PersistentVolumeClaim" and status else check(present[extra])
            rows.append(ObjectHealth(kind, extra, health, _role_label(present[extra])))
    rows = _held_to_version(rows, rollout, kinds[1][1])
    phase = RolloutStatus.from_obj(section(rollout, "status")).phase
    if phase in REPLACING_PHASES:
        rows = [_replacing(r) for r in rows]
    elif phase == Phase.IDLE and rows[0].health.status is HealthStatus.HEALTHY:
        rows = [_kept(r) for r in rows]
    rows = _with_reach(rows, kinds[2][1].values(), kinds[1][1].values())
    return tuple(_with_stages(rows, rollout))


def _with_reach(rows: list[ObjectHealth], services: Iterable[Obj], pods: Iterable[Obj]) -> list[ObjectHealth]:
    """Each member Service through which its running pod cannot be reached (health/reach.py) no healthier than
    that says: Degraded once the pod is Ready, Progressing before."""
    pods = tuple(pods)
    found = {u.service: u for u in unreachable_members(services, pods)}
    return [
        replace(r, health=worse(r.health, reach_health(found[r.name], pods))) if r.kind == "Service" and r.name in found else r
        for r in rows
    ]


def _with_stages(rows: list[ObjectHealth], rollout: Obj | None) -> list[ObjectHealth]:
    """Each Pod row with the stage the planner recorded for it in the KDRollout (none recorded: left empty)."""
    recorded = RolloutStatus.from_obj(section(rollout, "status"))
    return [replace(r, stage=str(recorded.stage(r.name) or "")) if r.kind == "Pod" else r for r in rows]


def _app_image(pod: Obj) -> str:
    for container in items(section(pod, "spec"), "containers"):
        if text(container, "name") == APP_CONTAINER:
            return text(container, "image")
    return ""


def _held_to_version(rows: list[ObjectHealth], rollout: Obj | None, pods: dict[str, Obj]) -> list[ObjectHealth]:
    """Ready is what the pods run: with the KDRollout Idle at a version whose images it records (status.images), a
    member pod whose app container runs another image is Degraded, whatever the KDRollout says."""
    status = RolloutStatus.from_obj(section(rollout, "status"))
    images = status.images
    if not images or status.phase != Phase.IDLE:
        return rows
    out: list[ObjectHealth] = []
    for row in rows:
        pod = pods.get(row.name) if row.kind == "Pod" else None
        want = images.get(row.role, "") if pod is not None else ""
        have = _app_image(pod) if pod is not None else ""
        if want and have and have != want:
            row = ObjectHealth(
                row.kind,
                row.name,
                Health(
                    HealthStatus.DEGRADED,
                    (f"runs {have}, not {want} of version {status.app_version or ''} the KDRollout is at"),
                ),
                row.role,
            )
        out.append(row)
    return out


KEPT_MESSAGE = (
    "pods kept at an earlier template revision (OnDelete; gitops-kd replaces pods when the app version or image changes)"
)


def _kept(row: ObjectHealth) -> ObjectHealth:
    """With the rollout Idle and Ready, OnDelete pods at an earlier template revision are kept on purpose:
    gitops-kd replaces pods when the app's version or image changes, not for its own additions to the template
    (e.g. its init container, added after KubeDirector created the pods of a first deploy). Healthy, saying so."""
    if (
        row.kind == "StatefulSet"
        and row.health.status is HealthStatus.PROGRESSING
        and row.health.message.endswith(ON_DELETE_WAITING)
    ):
        return ObjectHealth(row.kind, row.name, Health(HealthStatus.HEALTHY, KEPT_MESSAGE), row.role)
    return row


def _replacing(row: ObjectHealth) -> ObjectHealth:
    """During an upgrade or downgrade a member down or its pod missing is the planned replacement of that pod:
    Progressing, not Degraded or Missing (a pod that exists and fails stays Degraded)."""
    status, message = row.health.status, row.health.message
    if row.kind == KDCLUSTER_KIND and status is HealthStatus.DEGRADED and message.startswith(MEMBERS_DOWN):
        return ObjectHealth(
            row.kind,
            row.name,
            Health(HealthStatus.PROGRESSING, "members being replaced by the rollout: " + message[len(MEMBERS_DOWN) :]),
            row.role,
        )
    if row.kind == "Pod" and status is HealthStatus.MISSING:
        return ObjectHealth(
            row.kind, row.name, Health(HealthStatus.PROGRESSING, f"being replaced by the rollout ({message})"), row.role
        )
    return row


def _role_label(obj: Obj) -> str:
    return text(section(section(obj, "metadata"), "labels"), ROLE_LABEL)


def aggregate(rows: Iterable[ObjectHealth]) -> Health:
    """The worst row's health, its message prefixed with the object ("Pod kdss-x-0: ...") and followed by
    how many other rows are as bad; on a tie the first row wins, so the KDRollout speaks for the cluster
    when it is as bad as anything else. A suspended KDRollout speaks over Progressing objects: nothing
    progresses while an operator holds the cluster (Missing and Degraded still show)."""
    rows = tuple(rows)
    if not rows:
        return Health(HealthStatus.HEALTHY)
    target = worst(r.health for r in rows)
    held = next((r for r in rows if r.kind == "KDRollout" and r.health.status is HealthStatus.SUSPENDED), None)
    if held is not None and target.status is HealthStatus.PROGRESSING:
        return held.health
    row = next(r for r in rows if r.health is target)
    others = sum(1 for r in rows if r is not row and r.health.status is target.status)
    more = f" (and {others} more {target.status.value})" if others and target.status is not HealthStatus.HEALTHY else ""
    if row.kind == ROLLOUT_KIND:
        return Health(row.health.status, row.health.message + more)
    message = f"{row.kind} {row.name}" + (f": {row.health.message}" if row.health.message else "")
    return Health(row.health.status, message + more)


def cluster_health(
    rollout: Obj | None, kdcluster: Obj | None, unreadable: Collection[str] = (), **objects: Iterable[Obj]
) -> ClusterHealth:
    """The ClusterHealth of a KDCluster and its KDRollout (either may be None) from its objects
    (keyword lists statefulsets, pods, services, pvcs, as in object_healths; `unreadable` as there)."""
    listed = {kind: tuple(objs) for kind, objs in objects.items()}
    rows = object_healths(rollout, kdcluster, unreadable=unreadable, **listed)
    meta = section(rollout or kdcluster, "metadata")
    r_spec, r_status = section(rollout, "spec"), RolloutStatus.from_obj(section(rollout, "status"))
    return ClusterHealth(
        namespace=text(meta, "namespace"),
        name=text(meta, "name"),
        app=text(r_spec, "app") or text(section(kdcluster, "spec"), "app"),
        live_version=r_status.app_version or "",
        target_version=text(r_spec, "targetVersion"),
        phase=str(r_status.phase or ""),
        health=aggregate(rows),
        objects=rows,
        unreachable=unreachable_members(listed.get("services", ()), listed.get("pods", ())),
    )
