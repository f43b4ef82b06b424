"""The observed state: live KDApps, KDClusters, their StatefulSets, Pods, Services and KDRollout (pure values).

Built by the collector from informer caches; read by diff/ and plan/. Every object is a frozen
dataclass; mappings are made read-only on construction (``raw``/``template`` are deep-frozen), so an
observed state can be shared and compared freely. Times are timezone-aware ``datetime`` values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from types import MappingProxyType
from typing import Any

from gitops_kd.constants import APPLY_STALL_REASONS, Phase
from gitops_kd.rollout.model import PodProgress, RolloutStatus  # status.pods[<pod>], typed where the status is
from gitops_kd.spec.freeze import FrozenMap, freeze
from gitops_kd.spec.state import Key
from gitops_kd.spec.upgrade import UpgradeSpec

ON_DELETE = "OnDelete"
ROLLING_UPDATE = "RollingUpdate"


def _frozen(value: Any) -> Any:
    """Deep-freeze a mapping (FrozenMap, tuples); leave None as is."""
    return None if value is None else freeze(value)


def _readonly(mapping: Mapping[Any, Any]) -> Mapping[Any, Any]:
    return mapping if isinstance(mapping, (MappingProxyType, FrozenMap)) else MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class ObservedPod:
    """One member pod of a role StatefulSet.

    ``revision`` is the pod's ``controller-revision-hash`` label ("" if missing); ``ready`` is the
    Ready condition; ``deleting`` is True when metadata.deletionTimestamp is set; ``created_at`` is
    metadata.creationTimestamp; ``ready_since`` the Ready condition's lastTransitionTime when Ready;
    ``ports`` the app container's (name, containerPort) pairs: what the version the pod runs listens on
    (KubeDirector declares one per service endpoint of the role, named by the endpoint's id).
    """

    name: str
    namespace: str
    role: str
    ordinal: int
    uid: str
    revision: str
    phase: str
    ready: bool
    deleting: bool
    created_at: datetime | None = None
    ready_since: datetime | None = None
    pod_ip: str | None = None
    image: str = ""  # the app container's image
    ports: tuple[tuple[str, int], ...] = ()

    @property
    def up(self) -> bool:
        """Ready and not being deleted: counts as serving for the one-pod-down rule."""
        return self.ready and not self.deleting


@dataclass(frozen=True)
class ObservedStatefulSet:
    """A role's StatefulSet. ``template`` is spec.template (deep-frozen), ``raw`` the whole object.

    ``update_strategy`` is spec.updateStrategy.type ("RollingUpdate" when unset, as the apiserver
    defaults it). ``current_revision``/``update_revision`` come from status ("" when not yet set).
    """

    name: str
    namespace: str
    role: str
    uid: str
    generation: int
    observed_generation: int | None
    update_strategy: str
    replicas: int
    current_revision: str
    update_revision: str
    template: Mapping[str, Any]
    raw: Mapping[str, Any] = field(default_factory=FrozenMap, repr=False, compare=False)
    ready_replicas: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "template", _frozen(self.template))
        object.__setattr__(self, "raw", _frozen(self.raw))

    @property
    def settled(self) -> bool:
        """True when the StatefulSet controller has seen the latest spec (observedGeneration caught up)."""
        return self.observed_generation is not None and self.observed_generation >= self.generation

    @property
    def spec(self) -> Mapping[str, Any]:
        """spec of the raw object (empty mapping if ``raw`` has none)."""
        return self.raw.get("spec") or FrozenMap()


@dataclass(frozen=True)
class ObservedService:
    """A Service of a KDCluster: a member Service (``role`` set) or the headless one (``role`` None).

    ``ports`` is spec.ports, each a frozen mapping.
    """

    name: str
    namespace: str
    role: str | None
    ports: tuple[Mapping[str, Any], ...]
    raw: Mapping[str, Any] = field(default_factory=FrozenMap, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ports", tuple(freeze(p) for p in self.ports))
        object.__setattr__(self, "raw", _frozen(self.raw))

    @property
    def pod(self) -> str | None:
        """The member pod this Service selects (statefulset.kubernetes.io/pod-name), if any."""
        selector = (self.raw.get("spec") or {}).get("selector") or {}
        value = selector.get("statefulset.kubernetes.io/pod-name")
        return str(value) if value else None


@dataclass(frozen=True)
class ObservedRollout:
    """gitops-kd's KDRollout for one KDCluster (same namespace and name).

    The current attempt, all from the status (written in one write when it started): ``target_version``,
    ``from_version``, ``commit``, ``direction``, ``from_upgrade``; and its progress: ``app_version`` (the
    version every pod runs), ``phase`` (Idle | Upgrading | Downgrading | Stalled), ``pods`` (progress
    per pod name), ``gate_started_at`` (when gating of ``current_pod`` began), ``stalled_reason``. The spec
    (what Git asks) is never read to plan: a spec written without its status must not count as started.
    Optional extras: ``current_pod`` (the pod being upgraded), ``gate_checked_at`` (last gate probe),
    ``direction`` ("upgrade" | "downgrade" | "rebuild" | "adopt"), ``app`` (spec.app), ``observed_generation``,
    ``from_upgrade``: the upgrade stanza of the version being left, as recorded by EnsureRollout
    (RolloutStatus.from_stanza, parsed back with UpgradeSpec.from_annotation) — a downgrade's data rules come
    from it once the live KDApp already carries the older version. ``target_upgrade``: the stanza of the
    attempt's target (status.targetStanza): on stock KubeDirector the KDApp clusters use is held at its old
    spec, so the stanza of the version a cluster runs is read here (docs/design/stock-kubedirector.md).
    """

    name: str
    namespace: str
    uid: str
    generation: int
    target_version: str | None
    from_version: str | None
    commit: str | None
    app_version: str | None
    phase: str
    pods: Mapping[str, PodProgress] = field(default_factory=dict)
    gate_started_at: datetime | None = None
    stalled_reason: str | None = None
    conditions: tuple[Mapping[str, Any], ...] = ()
    raw: Mapping[str, Any] = field(default_factory=FrozenMap, repr=False, compare=False)
    current_pod: str | None = None
    gate_checked_at: datetime | None = None
    direction: str | None = None
    app: str | None = None
    observed_generation: int | None = None
    from_upgrade: UpgradeSpec | None = None
    target_upgrade: UpgradeSpec | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "pods", _readonly(self.pods))
        object.__setattr__(self, "conditions", tuple(freeze(c) for c in self.conditions))
        object.__setattr__(self, "raw", _frozen(self.raw))

    @property
    def stalled(self) -> bool:
        return self.phase == Phase.STALLED

    @cached_property
    def recorded(self) -> RolloutStatus:
        """The whole status, typed: read once per observed object (the collector reuses an unchanged one, so an
        in-sync fleet's plans do not parse each status again)."""
        return RolloutStatus.from_obj(self.raw.get("status"))

    @property
    def apply_stalled(self) -> bool:
        """Stalled by a KDApp / KDCluster write that failed again and again, not by a step of the attempt."""
        return self.stalled and self.stalled_reason in APPLY_STALL_REASONS

    @property
    def apply_failure_of(self) -> tuple[str, str, str] | None:
        """(kind, namespace, name) of the write status.applyFailure counts failures of, or None."""
        record = self.recorded.apply_failure
        if record is None or not record.kind:
            return None
        return record.kind, record.namespace, record.name

    @property
    def reconciling(self) -> bool:
        """The Reconciling condition is True (Idle and Reconciling: an apply stall lifted, not Ready again yet)."""
        return any(c.get("type") == "Reconciling" and c.get("status") == "True" for c in self.conditions)

    @property
    def step(self) -> str:
        """status.step: what the rollout is doing or waiting for ("" when unset)."""
        return self.recorded.step or ""

    @property
    def suspended(self) -> bool:
        """spec.suspend: an operator paused the cluster (gitops-kd suspend); nothing more is done until resumed."""
        return bool((self.raw.get("spec") or {}).get("suspend"))

    @property
    def synced_digest(self) -> str | None:
        """The drift baseline digest recorded when the cluster was last seen in sync (RolloutStatus.synced_digest)."""
        return self.recorded.synced_digest

    @property
    def images(self) -> Mapping[str, str]:
        """status.images: role id -> the app image the version it is Ready at renders (recorded with Ready)."""
        return self.recorded.images

    def progress(self, pod: str) -> PodProgress | None:
        """The progress entry of a pod, or None."""
        return self.pods.get(pod)

    def stage(self, pod: str) -> str | None:
        """status.pods[pod].stage: the stage the planner recorded for the pod (None: none recorded)."""
        entry = self.pods.get(pod)
        return entry.stage if entry is not None else None


@dataclass(frozen=True)
class ObservedApp:
    """A live KubeDirectorApp. ``upgrade`` is read back from the gitops-kd.io/upgrade annotation."""

    namespace: str
    name: str
    version: str
    upgrade: UpgradeSpec | None
    resource_version: str
    raw: Mapping[str, Any] = field(default_factory=FrozenMap, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "raw", _frozen(self.raw))

    @property
    def key(self) -> Key:
        return (self.namespace, self.name)

    @property
    def distro_id(self) -> str | None:
        value = (self.raw.get("spec") or {}).get("distroID")
        return str(value) if value is not None else None

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.raw.get("spec") or FrozenMap()


@dataclass(frozen=True)
class ObservedCluster:
    """A live KubeDirectorCluster and what it owns, grouped by role id.

    ``kd_state`` is KubeDirector's status.state (e.g. "configured"); ``statefulsets`` and ``pods``
    are keyed by role id (pods sorted by ordinal); ``rollout`` is the KDRollout, if any.
    """

    namespace: str
    name: str
    uid: str
    app: str
    kd_state: str | None
    raw: Mapping[str, Any] = field(default_factory=FrozenMap, repr=False, compare=False)
    statefulsets: Mapping[str, ObservedStatefulSet] = field(default_factory=dict)
    pods: Mapping[str, tuple[ObservedPod, ...]] = field(default_factory=dict)
    services: tuple[ObservedService, ...] = ()
    rollout: ObservedRollout | None = None
    _all_pods: tuple[ObservedPod, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "raw", _frozen(self.raw))
        object.__setattr__(self, "statefulsets", _readonly(self.statefulsets))
        object.__setattr__(self, "pods", _readonly({r: tuple(sorted(p, key=lambda x: x.ordinal)) for r, p in self.pods.items()}))
        object.__setattr__(self, "services", tuple(self.services))
        object.__setattr__(self, "_all_pods", tuple(p for role in sorted(self.pods) for p in self.pods[role]))

    @property
    def key(self) -> Key:
        return (self.namespace, self.name)

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.raw.get("spec") or FrozenMap()

    def all_pods(self) -> tuple[ObservedPod, ...]:
        """Every member pod, sorted by (role id, ordinal) (computed once: the model is immutable)."""
        return self._all_pods

    def pod(self, name: str) -> ObservedPod | None:
        """The pod with this name, or None."""
        return next((p for p in self.all_pods() if p.name == name), None)

    def role_pods(self, role_id: str) -> tuple[ObservedPod, ...]:
        return self.pods.get(role_id, ())

    def statefulset(self, role_id: str) -> ObservedStatefulSet | None:
        return self.statefulsets.get(role_id)

    def member_services(self, role_id: str | None = None) -> tuple[ObservedService, ...]:
        """Services with a role (of ``role_id`` when given), sorted by name."""
        found = [s for s in self.services if s.role is not None and (role_id is None or s.role == role_id)]
        return tuple(sorted(found, key=lambda s: s.name))

    def live_members(self, role_id: str) -> int | None:
        """spec.roles[id=role_id].members of the live KDCluster, or None if not listed."""
        for role in self.spec.get("roles") or ():
            if role.get("id") == role_id:
                members = role.get("members")
                return int(members) if members is not None else None
        return None


@dataclass(frozen=True)
class ObservedState:
    """Everything observed at one moment: live apps and clusters keyed by (namespace, name), and which KubeDirector
    serves them."""

    apps: Mapping[Key, ObservedApp] = field(default_factory=dict)
    clusters: Mapping[Key, ObservedCluster] = field(default_factory=dict)
    flavour: str = ""  # the installed KubeDirector (gitops_kd.kd.flavour's names); "" when not read: as stock

    def __post_init__(self) -> None:
        object.__setattr__(self, "apps", _readonly(self.apps))
        object.__setattr__(self, "clusters", _readonly(self.clusters))

    __hash__ = None  # type: ignore[assignment]  # holds mappings

    @cached_property
    def clusters_by_app(self) -> Mapping[str, tuple[ObservedCluster, ...]]:
        """Live clusters per spec.app, each sorted by (namespace, name) (built once per state: a lookup per app costs
        its own clusters, not a pass over the fleet)."""
        by_app: dict[str, list[ObservedCluster]] = {}
        for _key, cluster in sorted(self.clusters.items()):
            by_app.setdefault(cluster.app, []).append(cluster)
        return MappingProxyType({app: tuple(clusters) for app, clusters in by_app.items()})

    def clusters_of_app(self, namespace: str, app: str) -> tuple[ObservedCluster, ...]:
        """Live clusters in ``namespace`` whose spec.app is ``app``, sorted by name."""
        return tuple(c for c in self.clusters_by_app.get(app, ()) if c.namespace == namespace)
