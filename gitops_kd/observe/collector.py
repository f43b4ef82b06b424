"""Collector: informers on KDApps, KDClusters, their StatefulSets/Pods/Services and KDRollouts -> ObservedState."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from kubernetes.client import ApiClient

from gitops_kd.constants import ROLLOUT_API_VERSION, ROLLOUT_PLURAL, UPGRADE_ANNOTATION
from gitops_kd.kd.layout import (
    API_VERSION,
    APP_CONTAINER,
    CLUSTER_LABEL,
    KDAPP_PLURAL,
    KDCLUSTER_PLURAL,
    REVISION_LABEL,
    ROLE_LABEL,
)
from gitops_kd.observe.compact import transform
from gitops_kd.observe.fanout import NamespacedInformers
from gitops_kd.observe.index import ClusterIndex, owner_of
from gitops_kd.observe.kdflavour import FlavourCache
from gitops_kd.observed import (
    ROLLING_UPDATE,
    ObservedApp,
    ObservedCluster,
    ObservedPod,
    ObservedRollout,
    ObservedService,
    ObservedState,
    ObservedStatefulSet,
)
from gitops_kd.rollout.model import RolloutStatus, status_key
from gitops_kd.rollout.reach import container_ports
from gitops_kd.spec.errors import SpecError
from gitops_kd.spec.shared import SharedValues
from gitops_kd.spec.upgrade import UpgradeSpec
from kubeplumb.informer import Informer, Transform

log = logging.getLogger(__name__)


# (kind name, api version, plural, label selector)
KINDS: tuple[tuple[str, str, str, str | None], ...] = (
    ("apps", API_VERSION, KDAPP_PLURAL, None),
    ("clusters", API_VERSION, KDCLUSTER_PLURAL, None),
    ("statefulsets", "apps/v1", "statefulsets", None),  # all: a KDCluster's by ownerReference, its label may be gone
    ("pods", "v1", "pods", CLUSTER_LABEL),
    ("services", "v1", "services", None),
    ("rollouts", ROLLOUT_API_VERSION, ROLLOUT_PLURAL, None),
)

ChangeCallback = Callable[[str, tuple[str, str]], None]
"""callback(kind, (namespace, name)): kind "app" (a KDApp changed) or "cluster" (anything of a KDCluster)."""


@dataclass(frozen=True)
class Expectation:
    """What the cache must show after a write: `plural` object at `resource_version` or later, or (when
    `gone_uid` is set) the object with that uid gone or replaced."""

    plural: str
    namespace: str
    name: str
    resource_version: str | None = None
    gone_uid: str | None = None


class Collector:
    """Watch-backed observation of every KDCluster in `namespace`: one namespace (a string), a set of
    namespaces (one set of informers per namespace, merged), or all namespaces (None)."""

    def __init__(
        self, api_client: ApiClient, *, namespace: str | Collection[str] | None = None, resync_seconds: float | None = None
    ) -> None:
        self.namespace = namespace
        self.namespaces: frozenset[str] | None = watched_namespaces(namespace)
        self._list_ns = namespace if isinstance(namespace, str) else None  # a set's informers list only their own
        self.shared = SharedValues()  # the informers cache compact objects (observe/compact.py), equal values shared
        self._informers: dict[str, Informer | NamespacedInformers] = {
            kind: _informer(
                api_client, api, plural, namespace, selector, resync_seconds, transform(self.shared, pod=kind == "pods")
            )
            for kind, api, plural, selector in KINDS
        }
        self._callbacks: list[ChangeCallback] = []
        self._changed = threading.Condition()
        self._snap_lock = threading.Lock()
        # (resourceVersions, model) per key from the last snapshot: unchanged objects are not rebuilt
        self._apps: dict[tuple[str, str], tuple[Any, ObservedApp]] = {}
        self._clusters: dict[tuple[str, str], tuple[Any, ObservedCluster]] = {}
        self.index = ClusterIndex()  # per-cluster lookups for snapshot_of (a per-cluster reconcile)
        self.flavour = FlavourCache(api_client)  # which KubeDirector: every snapshot says it (the planner reads it)
        for kind, informer in self._informers.items():
            informer.add_handler(partial(self._on_informer_event, kind))

    def watches(self, namespace: str) -> bool:
        """True when objects of `namespace` are observed."""
        return self.namespaces is None or namespace in self.namespaces

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        for informer in self._informers.values():
            informer.start()

    def stop(self) -> None:
        for informer in self._informers.values():
            informer.stop()

    def wait_synced(self, timeout: float) -> bool:
        """True once every informer has listed (within `timeout` seconds overall)."""
        deadline = time.monotonic() + timeout
        return all(i.wait_synced(max(0.0, deadline - time.monotonic())) for i in self._informers.values())

    @property
    def informers(self) -> Mapping[str, Informer | NamespacedInformers]:
        """The informers by kind name ("apps", "clusters", "statefulsets", "pods", "services", "rollouts"),
        for extra handlers (e.g. drift watching); read-only use. With a set of namespaces each is a
        NamespacedInformers (the same add_handler/get/list surface)."""
        return dict(self._informers)

    def on_change(self, callback: ChangeCallback) -> None:
        """Call `callback(kind, key)` for each change seen; keep it quick (queue a key)."""
        self._callbacks.append(callback)

    # -- reads -------------------------------------------------------------------------------------
    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A cached object by plural (``kubedirectorclusters``, ``pods``, ...), or None."""
        for kind, _api, kind_plural, _sel in KINDS:
            if kind_plural == plural:
                return self._informers[kind].get(namespace, name)
        raise KeyError(f"collector does not watch {plural}")

    def wait_for(self, expectations: Iterable[Expectation], timeout: float) -> bool:
        """Block until the cache reflects every expectation (read-your-writes); False on timeout."""
        pending = list(expectations)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                pending = [e for e in pending if not self._met(e)]
                remaining = deadline - time.monotonic()
                if not pending or remaining <= 0:
                    return not pending
                self._changed.wait(min(remaining, 0.5))

    def snapshot(self) -> ObservedState:
        """The observed state now, from the caches only. An app or cluster none of whose objects changed
        (same resourceVersions) is the very object of the previous snapshot: nothing is copied or frozen
        again, and the identity-keyed memos of diff and plan hit."""
        with self._snap_lock:
            apps: dict[tuple[str, str], ObservedApp] = {}
            app_memo: dict[tuple[str, str], tuple[Any, ObservedApp]] = {}
            for raw in self._informers["apps"].shared(self._list_ns):
                key = (_ns(raw), _name(raw))
                app_memo[key] = self._app_model(key, raw)
                apps[key] = app_memo[key][1]
            sts = _by_cluster(self._informers["statefulsets"].shared(self._list_ns))
            pods = _by_cluster(self._informers["pods"].shared(self._list_ns))
            svcs = _by_cluster(self._informers["services"].shared(self._list_ns))
            rollouts = {(_ns(r), _name(r)): r for r in self._informers["rollouts"].shared(self._list_ns)}
            clusters: dict[tuple[str, str], ObservedCluster] = {}
            cluster_memo: dict[tuple[str, str], tuple[Any, ObservedCluster]] = {}
            for raw in self._informers["clusters"].shared(self._list_ns):
                key = (_ns(raw), _name(raw))
                cluster_memo[key] = self._cluster_model(
                    key, raw, sts.get(key, []), pods.get(key, []), svcs.get(key, []), rollouts.get(key)
                )
                clusters[key] = cluster_memo[key][1]
            self._apps, self._clusters = app_memo, cluster_memo  # objects gone from the caches are forgotten
            return ObservedState(apps=apps, clusters=clusters, flavour=self.flavour.name())

    def snapshot_of(self, clusters: Iterable[tuple[str, str]], app_names: Iterable[str]) -> ObservedState:
        """The observed state of just these KDClusters and the KDApps of these names, from the index: its cost
        is that of the objects asked for, not of the fleet. Models are shared with ``snapshot()`` (same
        resourceVersions, same objects), so the memos of diff and plan hit across both."""
        with self._snap_lock:
            apps: dict[tuple[str, str], ObservedApp] = {}
            for name in app_names:
                for key in self.index.apps_named(name):
                    raw = self.index.app(key)
                    if raw is None:
                        continue
                    self._apps[key] = self._app_model(key, raw)
                    apps[key] = self._apps[key][1]
            found: dict[tuple[str, str], ObservedCluster] = {}
            for key in clusters:
                parts = self.index.cluster(key)
                if parts is None:
                    continue
                self._clusters[key] = self._cluster_model(key, *parts)
                found[key] = self._clusters[key][1]
            return ObservedState(apps=apps, clusters=found, flavour=self.flavour.name())

    def _app_model(self, key: tuple[str, str], raw: Mapping[str, Any]) -> tuple[Any, ObservedApp]:
        """(resourceVersion, model) of a KDApp: the previous snapshot's model while its resourceVersion holds."""
        rv = _rv_of(raw)
        known = self._apps.get(key)
        return rv, known[1] if known is not None and known[0] == rv else observed_app(raw)

    def _cluster_model(
        self,
        key: tuple[str, str],
        raw: Mapping[str, Any],
        sts: list[Any],
        pods: list[Any],
        svcs: list[Any],
        rollout: Mapping[str, Any] | None,
    ) -> tuple[Any, ObservedCluster]:
        """(resourceVersions, model) of a KDCluster and its objects: the previous model while none changed."""
        sig = (
            _rv_of(raw),
            *(tuple(_rv_of(o) for o in objs) for objs in (sts, pods, svcs)),
            _rv_of(rollout) if rollout is not None else None,
        )
        cached = self._clusters.get(key)
        return sig, cached[1] if cached is not None and cached[0] == sig else observed_cluster(raw, sts, pods, svcs, rollout)

    # -- internals ---------------------------------------------------------------------------------
    def _met(self, e: Expectation) -> bool:
        obj = self.get(e.plural, e.namespace, e.name)
        if e.gone_uid is not None and (obj is None or _meta(obj).get("uid") != e.gone_uid):
            return True
        if e.resource_version is None:
            return obj is not None and e.gone_uid is None
        return obj is not None and _rv_at_least(_meta(obj).get("resourceVersion"), e.resource_version)

    def _on_informer_event(self, kind: str, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        self.index.on_event(kind, event, obj, old)
        self._on_event(kind, obj)

    def _on_event(self, kind: str, obj: Mapping[str, Any]) -> None:
        with self._changed:
            self._changed.notify_all()
        ns = _ns(obj)
        if kind == "apps":
            key, what = (ns, _name(obj)), "app"
        elif kind in ("clusters", "rollouts"):
            key, what = (ns, _name(obj)), "cluster"
        else:
            owner = owner_of(obj)
            if owner is None:
                return
            key, what = owner, "cluster"
        for callback in list(self._callbacks):
            try:
                callback(what, key)
            except Exception:  # noqa: BLE001 - a broken callback must not stop the informer
                log.exception("collector: change callback failed for %s %s/%s", what, *key)


def watched_namespaces(namespace: str | Collection[str] | None) -> frozenset[str] | None:
    """The namespaces a Collector observes: None for all."""
    if namespace is None:
        return None
    return frozenset([namespace]) if isinstance(namespace, str) else frozenset(namespace)


def _informer(
    api_client: ApiClient,
    api: str,
    plural: str,
    namespace: str | Collection[str] | None,
    selector: str | None,
    resync_seconds: float | None,
    compact: Transform,
) -> Informer | NamespacedInformers:
    if namespace is None or isinstance(namespace, str):
        return Informer(
            api_client,
            api,
            plural,
            namespace=namespace,
            label_selector=selector,
            resync_seconds=resync_seconds,
            transform=compact,
        )
    return NamespacedInformers(
        api_client, api, plural, namespaces=namespace, label_selector=selector, resync_seconds=resync_seconds, transform=compact
    )


# -- dict -> model (pure) --------------------------------------------------------------------------
def observed_app(raw: Mapping[str, Any]) -> ObservedApp:
    """A live KDApp; an unreadable upgrade annotation is logged and read as no stanza."""
    meta = _meta(raw)
    text = (meta.get("annotations") or {}).get(UPGRADE_ANNOTATION)
    upgrade: UpgradeSpec | None = None
    if text:
        source = f"KubeDirectorApp {_ns(raw)}/{_name(raw)}: annotation {UPGRADE_ANNOTATION}"
        try:
            upgrade = UpgradeSpec.from_annotation(text, source)
        except SpecError as exc:
            log.warning("%s", exc)
    return ObservedApp(
        namespace=_ns(raw),
        name=_name(raw),
        version=str((raw.get("spec") or {}).get("version", "")),
        upgrade=upgrade,
        resource_version=str(meta.get("resourceVersion", "")),
        raw=raw,
    )


def observed_cluster(
    raw: Mapping[str, Any],
    sts: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    svcs: Sequence[Mapping[str, Any]],
    rollout: Mapping[str, Any] | None,
) -> ObservedCluster:
    """A live KDCluster with its role StatefulSets, member pods, Services and KDRollout.

    A role's StatefulSet is the one KubeDirector's status names for it, else the first by name carrying its role
    label; its members are that StatefulSet's pods (`<statefulset>-<ordinal>`). A second StatefulSet labelled with
    the role (a copy, or one KubeDirector made beside one it did not see in time) and its pods are not the role's:
    taken as members, their pods would be replaced forever at a revision their own StatefulSet never gets."""
    meta, spec = _meta(raw), raw.get("spec") or {}
    by_name = kd_roles(raw)  # KubeDirector's own record of each object's role: a label may be removed or changed
    found = [s for s in (observed_statefulset(x, by_name.get(_name(x), "")) for x in sts) if s is not None]
    statefulsets: dict[str, ObservedStatefulSet] = {}
    for s in sorted(found, key=lambda s: (s.name not in by_name, s.name)):  # KubeDirector's named ones first
        statefulsets.setdefault(s.role, s)
    by_role: dict[str, list[ObservedPod]] = {}
    for p in pods:
        pod = observed_pod(p)
        if pod is not None and _member_of(pod, statefulsets.get(pod.role)):
            by_role.setdefault(pod.role, []).append(pod)
    services = tuple(observed_service(s, by_name.get(_name(s), "")) for s in sorted(svcs, key=_name))
    return ObservedCluster(
        namespace=_ns(raw),
        name=_name(raw),
        uid=str(meta.get("uid", "")),
        app=str(spec.get("app", "")),
        kd_state=(raw.get("status") or {}).get("state"),
        raw=raw,
        statefulsets=statefulsets,
        pods={r: tuple(p) for r, p in by_role.items()},
        services=services,
        rollout=observed_rollout(rollout) if rollout else None,
    )


def _member_of(pod: ObservedPod, statefulset: ObservedStatefulSet | None) -> bool:
    """A pod of the role's StatefulSet (every pod of the role while none is observed)."""
    return statefulset is None or pod.name == f"{statefulset.name}-{pod.ordinal}"


def kd_roles(raw: Mapping[str, Any]) -> dict[str, str]:
    """Role id by object name from KubeDirector's status of a KDCluster: each role's statefulSet and its
    members' services (status.roles[].statefulSet, .members[].service)."""
    out: dict[str, str] = {}
    for r in (raw.get("status") or {}).get("roles") or ():
        rid = str(r.get("id") or "")
        names = [r.get("statefulSet"), *((m or {}).get("service") for m in r.get("members") or ())]
        out.update((str(n), rid) for n in names if n and rid)
    return out


def observed_statefulset(raw: Mapping[str, Any], status_role: str = "") -> ObservedStatefulSet | None:
    """A role StatefulSet: its role ``status_role`` (KubeDirector's status) when given, else its label; None
    without either."""
    meta, spec, status = _meta(raw), raw.get("spec") or {}, raw.get("status") or {}
    role = status_role or (meta.get("labels") or {}).get(ROLE_LABEL)
    if not role:
        return None
    return ObservedStatefulSet(
        name=_name(raw),
        namespace=_ns(raw),
        role=str(role),
        uid=str(meta.get("uid", "")),
        generation=int(meta.get("generation") or 0),
        observed_generation=status.get("observedGeneration"),
        update_strategy=str((spec.get("updateStrategy") or {}).get("type") or ROLLING_UPDATE),
        replicas=int(spec["replicas"]) if spec.get("replicas") is not None else 1,
        current_revision=str(status.get("currentRevision") or ""),
        update_revision=str(status.get("updateRevision") or ""),
        template=spec.get("template") or {},
        raw=raw,
        ready_replicas=int(status.get("readyReplicas") or 0),
    )


_ORDINAL = re.compile(r"-(\d+)$")


def observed_pod(raw: Mapping[str, Any]) -> ObservedPod | None:
    meta, status = _meta(raw), raw.get("status") or {}
    labels = meta.get("labels") or {}
    role, match = labels.get(ROLE_LABEL), _ORDINAL.search(_name(raw))
    if not role or match is None:
        return None
    ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
    is_ready = ready is not None and ready.get("status") == "True"
    return ObservedPod(
        name=_name(raw),
        namespace=_ns(raw),
        role=str(role),
        ordinal=int(match.group(1)),
        uid=str(meta.get("uid", "")),
        revision=str(labels.get(REVISION_LABEL, "")),
        phase=str(status.get("phase") or "Pending"),
        ready=is_ready,
        deleting=meta.get("deletionTimestamp") is not None,
        created_at=parse_time(meta.get("creationTimestamp")),
        ready_since=parse_time(ready.get("lastTransitionTime")) if is_ready and ready else None,
        pod_ip=status.get("podIP"),
        image=str(_app_container(raw).get("image") or ""),
        ports=container_ports(_app_container(raw)),
    )


def _app_container(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod's app container (empty when it has none)."""
    for container in (raw.get("spec") or {}).get("containers") or ():
        if container.get("name") == APP_CONTAINER:
            return container  # type: ignore[no-any-return]
    return {}


def observed_service(raw: Mapping[str, Any], status_role: str = "") -> ObservedService:
    """A KDCluster's Service: its role ``status_role`` (KubeDirector's status) when given, else its label."""
    role = status_role or (_meta(raw).get("labels") or {}).get(ROLE_LABEL)
    return ObservedService(
        name=_name(raw),
        namespace=_ns(raw),
        role=str(role) if role else None,
        ports=tuple((raw.get("spec") or {}).get("ports") or ()),
        raw=raw,
    )


def observed_rollout(raw: Mapping[str, Any]) -> ObservedRollout:
    meta, spec = _meta(raw), raw.get("spec") or {}
    st = RolloutStatus.from_obj(raw.get("status"))
    from_upgrade, target_upgrade = _stanza(raw, st.from_stanza, "from_stanza"), _stanza(raw, st.target_stanza, "target_stanza")
    return ObservedRollout(
        name=_name(raw),
        namespace=_ns(raw),
        uid=str(meta.get("uid", "")),
        generation=int(meta.get("generation") or 0),
        target_version=st.target_version,
        from_version=st.from_version,
        commit=st.commit,
        app_version=st.app_version,
        phase=str(st.phase or ""),
        pods=dict(st.pods),
        gate_started_at=parse_time(st.gate_started_at),
        stalled_reason=st.stalled_reason,
        conditions=st.conditions,
        raw=raw,
        current_pod=st.current_pod,
        gate_checked_at=parse_time(st.gate_checked_at),
        direction=st.direction,
        app=spec.get("app"),
        observed_generation=st.observed_generation,
        from_upgrade=from_upgrade,
        target_upgrade=target_upgrade,
    )


def _stanza(raw: Mapping[str, Any], text: str | None, field: str) -> UpgradeSpec | None:
    """An upgrade stanza the KDRollout's status records (JSON, ``text``) in the RolloutStatus field ``field``; None
    when absent or unreadable."""
    if not text:
        return None
    try:
        return UpgradeSpec.from_annotation(text, f"KDRollout {_ns(raw)}/{_name(raw)}: status.{status_key(field)}")
    except SpecError as exc:
        log.warning("%s", exc)
        return None


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime, or None."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _rv_of(obj: Mapping[str, Any]) -> str | None:
    return _meta(obj).get("resourceVersion")


def _by_cluster(items: list[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    out: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for obj in items:
        owner = owner_of(obj)
        if owner is not None:
            out.setdefault(owner, []).append(obj)
    return out


def _rv_at_least(have: Any, want: str) -> bool:
    if have is None:
        return False
    try:
        return int(have) >= int(want)
    except (TypeError, ValueError):
        return str(have) == want


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _ns(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("namespace") or "")


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")
