"""The simulated KubeDirector: reconciles KubeDirectorClusters into StatefulSets, Services and status over HTTP."""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kubernetes.client.exceptions import ApiException

from kdsim.events import EventRecorder
from kdsim.kubedirector import live_upgrade, names
from kdsim.kubedirector import roles as role_ops
from kdsim.kubedirector import status as st
from kdsim.kubedirector.model import App, Cluster, SpecError, parse_app, parse_cluster
from kdsim.kubedirector.render import (
    owner_references,
    render_headless_service,
    render_member_service,
    render_statefulset,
)
from kubeplumb.informer import Informer, object_key, split_key, start_synced
from kubeplumb.rest import RestClient
from kubeplumb.workqueue import RequeueAfter, WorkQueue

if TYPE_CHECKING:
    from kdsim.controllers.host import ClusterHost

log = logging.getLogger(__name__)

SETTLE_POLL_SECONDS = 1.0  # safety-net requeue while members are still changing


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


APP_INDEX = "app"  # KDClusters by spec.app
CLUSTER_INDEX = "cluster"  # member objects by "namespace/<cluster label>"


def _app_of(obj: dict[str, Any]) -> list[str]:
    app = (obj.get("spec") or {}).get("app")
    return [str(app)] if app else []


def _cluster_of(obj: dict[str, Any]) -> list[str]:
    cluster = (_meta(obj).get("labels") or {}).get(names.CLUSTER_LABEL)
    return [f"{_meta(obj).get('namespace') or ''}/{cluster}"] if cluster else []


def _has_labels(obj: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    have = _meta(obj).get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())


def _owned_by(obj: Mapping[str, Any], uid: str) -> bool:
    return any(r.get("uid") == uid and r.get("controller") for r in _meta(obj).get("ownerReferences") or [])


class KubeDirectorController:
    """Level-triggered KDCluster reconciler; one pass per queued "namespace/name"."""

    def __init__(
        self, api_client: Any, *, workers: int = 2, system_namespace: str = names.SYSTEM_NAMESPACE, live_upgrade: bool = False
    ) -> None:
        self.rest = RestClient(api_client)
        self.live_upgrade = live_upgrade  # react to a spec.app switch as KubeDirector's live-app-upgrade branch
        self.system_namespace = system_namespace
        selector = names.CLUSTER_LABEL
        self.clusters = Informer(api_client, names.API_VERSION, names.KDCLUSTER_PLURAL)
        self.apps = Informer(api_client, names.API_VERSION, names.KDAPP_PLURAL)
        self.sets = Informer(api_client, "apps/v1", "statefulsets", label_selector=selector)
        self.pods = Informer(api_client, "v1", "pods", label_selector=selector)
        self.services = Informer(api_client, "v1", "services", label_selector=selector)
        self.clusters.add_index(APP_INDEX, _app_of)
        self.sets.add_index(CLUSTER_INDEX, _cluster_of)
        self.services.add_index(CLUSTER_INDEX, _cluster_of)
        self.pods.add_index(CLUSTER_INDEX, _cluster_of)
        self.queue = WorkQueue(self.reconcile, name="kubedirector", workers=workers)
        self.events = EventRecorder(self.rest, "kubedirector", (names.KDCLUSTER_KIND, names.API_VERSION))
        self.clusters.add_handler(lambda _e, obj, _o: self.queue.add(object_key(obj)))
        self.apps.add_handler(self._on_app)
        for inf in (self.sets, self.pods, self.services):
            inf.add_handler(self._on_member_object)

    # -- wiring ------------------------------------------------------------------------------------
    def _informers(self) -> tuple[Informer, ...]:
        return (self.apps, self.sets, self.pods, self.services, self.clusters)

    def start(self) -> KubeDirectorController:
        start_synced(self._informers())
        self.queue.start()
        return self

    def stop(self) -> None:
        self.queue.stop()
        for inf in self._informers():
            inf.stop()
        self.events.close()

    def _on_member_object(self, _event: str, obj: dict[str, Any], _old: dict[str, Any] | None) -> None:
        cluster = (_meta(obj).get("labels") or {}).get(names.CLUSTER_LABEL)
        if cluster:
            self.queue.add(f"{_meta(obj).get('namespace')}/{cluster}")

    def _on_app(self, _event: str, app: dict[str, Any], _old: dict[str, Any] | None) -> None:
        for obj in self.clusters.by_index(APP_INDEX, str(_meta(app).get("name"))):
            self.queue.add(object_key(obj))

    # -- reconcile ---------------------------------------------------------------------------------
    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        obj = self.rest.get_or_none(names.API_VERSION, names.KDCLUSTER_PLURAL, namespace, name)
        if obj is None:
            return
        if _meta(obj).get("deletionTimestamp"):
            self._set_finalizer(obj, present=False)
            return
        obj = self._set_finalizer(obj, present=True)
        old_status = copy.deepcopy(obj.get("status") or {})
        status = {**st.empty_status(), **copy.deepcopy(old_status)}
        app_obj = self._find_app(obj)
        if app_obj is None:
            log.error(
                "KubeDirectorCluster %s: app referenced by cluster does not exist: %r", key, (obj.get("spec") or {}).get("app")
            )
            self._write_status(obj, old_status, status)
            return
        try:
            app = parse_app(app_obj)
            cluster = parse_cluster(obj, app)
        except SpecError as exc:
            log.error("%s", exc)  # KD's admission webhook would have refused this; wait for a fix
            self._write_status(obj, old_status, status)
            return
        self._sync_cluster_service(cluster, app, status)
        changed = self._sync_roles(cluster, app, status)
        upgrading = self._upgrade_roles(cluster, app, status) if self.live_upgrade else False
        hash_now = st.connections_hash((s, self._secret_version(cluster.namespace, s)) for s in cluster.connection_secrets)
        if changed or hash_now != status.get("lastConnectionHash"):
            status["specGenerationToProcess"] = int(status.get("specGenerationToProcess") or 0) + 1
            status["lastConnectionHash"] = hash_now
        self._sync_member_services(cluster, app, status)
        self._sync_members(cluster, app, status, obj)
        stable = not changed and not upgrading and role_ops.stable({r.id: r.members for r in cluster.roles}, status["roles"])
        status["state"] = st.cluster_state(str(old_status.get("state") or ""), stable)
        status["memberStateRollup"] = st.rollup(status["roles"])
        self._write_status(obj, old_status, status)
        if not stable:
            raise RequeueAfter(SETTLE_POLL_SECONDS)

    # -- KDCluster object --------------------------------------------------------------------------
    def _set_finalizer(self, obj: dict[str, Any], *, present: bool) -> dict[str, Any]:
        finalizers = list(_meta(obj).get("finalizers") or [])
        if (names.FINALIZER in finalizers) == present:
            return obj
        finalizers = finalizers + [names.FINALIZER] if present else [f for f in finalizers if f != names.FINALIZER]
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": _meta(obj).get("resourceVersion")}}
        log.info(
            "KubeDirectorCluster %s/%s: %s finalizer",
            _meta(obj).get("namespace"),
            _meta(obj).get("name"),
            "adding" if present else "greenlighting for deletion; removing",
        )
        return self.rest.patch(names.API_VERSION, names.KDCLUSTER_PLURAL, _meta(obj).get("namespace"), _meta(obj)["name"], patch)

    def _write_status(self, obj: dict[str, Any], old: dict[str, Any], new: dict[str, Any]) -> None:
        if st.without_volatile(new) == st.without_volatile(old):
            return
        new["generationUID"] = str(uuid.uuid4())
        ns, name = _meta(obj).get("namespace"), _meta(obj)["name"]
        body = {**obj, "status": new}
        for _ in range(5):
            try:
                self.rest.replace(names.API_VERSION, names.KDCLUSTER_PLURAL, ns, name, body, subresource="status")
                return
            except ApiException as exc:
                if exc.status != 409:
                    raise
                current = self.rest.get_or_none(names.API_VERSION, names.KDCLUSTER_PLURAL, ns, name)
                if current is None or _meta(current).get("deletionTimestamp"):
                    return
                body = {**current, "status": new}
        raise RuntimeError(f"KubeDirectorCluster {ns}/{name}: status update kept conflicting")

    def _find_app(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        spec = obj.get("spec") or {}
        app_id, catalog = spec.get("app"), spec.get("appCatalog")
        if not app_id:
            return None
        if catalog in (None, names.CATALOG_LOCAL):
            app = self.apps.get(_meta(obj).get("namespace"), app_id) or self.rest.get_or_none(
                names.API_VERSION, names.KDAPP_PLURAL, _meta(obj).get("namespace"), app_id
            )
            if app is not None or catalog is not None:
                return app
        return self.apps.get(self.system_namespace, app_id)

    def _secret_version(self, namespace: str, name: str) -> str:
        secret = self.rest.get_or_none("v1", "secrets", namespace, name)
        return str(_meta(secret).get("resourceVersion", "")) if secret else ""

    # -- owned objects -----------------------------------------------------------------------------
    def _fresh(self, informer: Informer, api_version: str, plural: str, ns: str, name: str) -> dict[str, Any] | None:
        """Cached object, confirmed with a GET on a cache miss (a just-created object may not be cached yet)."""
        if not name or name == st.NO_PORTS_SERVICE:
            return None
        return informer.get(ns, name) or self.rest.get_or_none(api_version, plural, ns, name)

    @staticmethod
    def _members(informer: Informer, cluster: Cluster, labels: Mapping[str, str]) -> list[dict[str, Any]]:
        """Cached objects labelled with the cluster's name (and `labels`), from the cluster index."""
        return [o for o in informer.by_index(CLUSTER_INDEX, f"{cluster.namespace}/{cluster.name}") if _has_labels(o, labels)]

    def _repair_owner(self, cluster: Cluster, api_version: str, plural: str, obj: Mapping[str, Any]) -> None:
        if not _owned_by(obj, cluster.uid):
            log.info("repairing owner ref on %s{%s}", plural, _meta(obj)["name"])
            self.rest.patch(
                api_version,
                plural,
                cluster.namespace,
                _meta(obj)["name"],
                {"metadata": {"ownerReferences": owner_references(cluster)}},
            )

    def _sync_cluster_service(self, cluster: Cluster, app: App, status: dict[str, Any]) -> None:
        name = status.get("clusterService") or ""
        svc = self._fresh(self.services, "v1", "services", cluster.namespace, name)
        if svc is None and not name:  # adopt one we created but failed to record
            svc = next(
                (
                    s
                    for s in self._members(self.services, cluster, {})
                    if _owned_by(s, cluster.uid) and (s.get("spec") or {}).get("clusterIP") == "None"
                ),
                None,
            )
        if svc is None:
            svc = self.rest.create("v1", "services", cluster.namespace, render_headless_service(cluster, app, name=name or None))
        else:
            self._repair_owner(cluster, "v1", "services", svc)
        status["clusterService"] = _meta(svc)["name"]

    def _sync_roles(self, cluster: Cluster, app: App, status: dict[str, Any]) -> bool:
        changed = False
        statuses: list[dict[str, Any]] = status["roles"]
        known = {r["id"] for r in statuses}
        statuses += [{"id": r.id, "statefulSet": "", "members": []} for r in cluster.roles if r.id not in known and r.members]
        creating = role_ops.any_creating(statuses)
        for rs in list(statuses):
            role = cluster.role(rs["id"])
            desired = role.members if role else 0
            sts = self._fresh(self.sets, "apps/v1", "statefulsets", cluster.namespace, rs.get("statefulSet") or "")
            if sts is None and rs.get("members"):
                changed |= role_ops.retire_all(rs)  # StatefulSet gone: its members must be cleaned up first
                continue
            if sts is None:
                if desired == 0:
                    if role is None:
                        statuses.remove(rs)
                    else:
                        rs["statefulSet"] = ""
                    continue
                sts = self._adopt_or_create_statefulset(cluster, app, role, rs, status)
                rs["statefulSet"] = _meta(sts)["name"]
                changed = True
            else:
                self._repair_owner(cluster, "apps/v1", "statefulsets", sts)
            if role is None and not rs.get("members"):
                self._delete("apps/v1", "statefulsets", cluster.namespace, rs["statefulSet"])
                statuses.remove(rs)
                continue
            if not creating:
                changed |= role_ops.resize(rs, desired, bool(role and role.storage), status)
        return changed

    def _upgrade_roles(self, cluster: Cluster, app: App, status: dict[str, Any]) -> bool:
        """The branch's upgrade of a switched cluster (live_upgrade.py): patch each role StatefulSet's image to the
        app's, track the roles, clear status.upgradeInfo once every member runs its role's image; True meanwhile."""
        info = status.get("upgradeInfo") or {}
        back = bool(info.get("isRollingBack"))
        for rs in status["roles"] if info else ():
            role, sts = app.role(rs["id"]), self.sets.get(cluster.namespace, rs.get("statefulSet") or "")
            if role is None or not role.image or sts is None:
                continue
            patch = live_upgrade.image_patch((sts.get("spec") or {}).get("template") or {}, role.image, back)
            if patch is not None:
                self.rest.patch("apps/v1", "statefulsets", cluster.namespace, _meta(sts)["name"], patch)
                rs["roleUpgradeStatus"] = live_upgrade.ROLLING_BACK if back else live_upgrade.UPGRADING
            pods = self._members(self.pods, cluster, {names.ROLE_LABEL: rs["id"]})
            if rs.get("roleUpgradeStatus") in (live_upgrade.UPGRADING, live_upgrade.ROLLING_BACK) and live_upgrade.role_done(
                pods, role.image, st.pod_ready
            ):
                rs["roleUpgradeStatus"] = "upgraded" if rs["roleUpgradeStatus"] == live_upgrade.UPGRADING else "rolledBack"
        if info and not any(
            rs.get("roleUpgradeStatus") in (live_upgrade.UPGRADING, live_upgrade.ROLLING_BACK) for rs in status["roles"]
        ):
            status["upgradeInfo"] = None  # handleClusterUpgrade: every role finished
            for rs in status["roles"]:
                rs.pop("roleUpgradeStatus", None)
        switched = live_upgrade.handle_switch(cluster.app_id, status)
        return switched or bool(status.get("upgradeInfo"))

    def _adopt_or_create_statefulset(
        self, cluster: Cluster, app: App, role: Any, rs: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        if not rs.get("statefulSet"):
            for sts in self._members(self.sets, cluster, {names.ROLE_LABEL: role.id}):
                if _owned_by(sts, cluster.uid):
                    return sts
        log.info("KubeDirectorCluster %s/%s: creating role{%s}", cluster.namespace, cluster.name, role.id)
        body = render_statefulset(
            cluster, app, role, cluster_service=status["clusterService"], name=rs.get("statefulSet") or None
        )
        return self.rest.create("apps/v1", "statefulsets", cluster.namespace, body)

    def _sync_member_services(self, cluster: Cluster, app: App, status: dict[str, Any]) -> None:
        for rs in status["roles"]:
            role = cluster.role(rs["id"])
            for m in rs.get("members") or []:
                if role is None or m.get("state") not in st.LIVE_STATES or m.get("service") == st.NO_PORTS_SERVICE:
                    continue
                svc = self._fresh(self.services, "v1", "services", cluster.namespace, m.get("service") or "")
                if svc is not None:
                    self._reconcile_service_type(cluster, svc)  # ports are deliberately left alone, as in KD
                    continue
                body = render_member_service(cluster, app, role, m["pod"])
                if body is None:
                    m["service"] = st.NO_PORTS_SERVICE
                    continue
                try:
                    self.rest.create("v1", "services", cluster.namespace, body)
                except ApiException as exc:
                    if exc.status != 409:
                        raise
                m["service"] = body["metadata"]["name"]

    def _reconcile_service_type(self, cluster: Cluster, svc: Mapping[str, Any]) -> None:
        self._repair_owner(cluster, "v1", "services", svc)
        have = (svc.get("spec") or {}).get("type") or "ClusterIP"
        want = cluster.service_type
        if have == want:
            return
        log.info("modifying serviceType from %s to %s for service{%s}", have, want, _meta(svc)["name"])
        if have in ("NodePort", "LoadBalancer") and want in ("ClusterIP", "LoadBalancer"):
            self._delete("v1", "services", cluster.namespace, _meta(svc)["name"])  # re-created on the next pass
        else:
            self.rest.patch("v1", "services", cluster.namespace, _meta(svc)["name"], {"spec": {"type": want}})

    def _sync_members(self, cluster: Cluster, app: App, status: dict[str, Any], obj: Mapping[str, Any]) -> None:
        """Replicas to the members' count, then each member's state from its pod. A role whose app needs systemd
        and has a config package waits for systemd before its configure (KD's systemdOk: `systemctl status
        systemd-journald` in the app container); no container of the simulated node runs systemd (its main
        process is the image's own command), and the real KubeDirector on it says so, so such members stay
        creating, with KD's Event `systemd not yet responsive in member{<pod>}` (reason Member)."""
        ns = cluster.namespace
        for rs in status["roles"]:
            app_role = app.role(str(rs.get("id")))
            systemd_ok = not (app.systemd_required and app_role is not None and app_role.setup_package is not None)
            sts = self._fresh(self.sets, "apps/v1", "statefulsets", ns, rs.get("statefulSet") or "")
            replicas = role_ops.live_count(rs)
            synced = True
            if sts is not None and (sts.get("spec") or {}).get("replicas") != replicas:
                log.info(
                    "changing replicas count for role{%s}: %s -> %s", rs["id"], (sts.get("spec") or {}).get("replicas"), replicas
                )
                self.rest.patch("apps/v1", "statefulsets", ns, rs["statefulSet"], {"spec": {"replicas": replicas}})
                synced = False
            for m in list(rs.get("members") or []):
                pod = self._fresh(self.pods, "v1", "pods", ns, m["pod"]) if m.get("pod") else None
                if m.get("state") == st.DELETE_PENDING:
                    m["state"] = st.DELETING
                elif m.get("state") == st.DELETING:
                    if pod is None and self._cleanup_member(ns, m):
                        rs["members"].remove(m)
                elif synced or m.get("state") != st.CREATE_PENDING:
                    st.observe_member(m, pod, systemd_ok=systemd_ok)
                    if not systemd_ok and st.systemd_waits(pod, m):
                        self.events.event(obj, "Normal", "Member", f"systemd not yet responsive in member{{{m['pod']}}}")

    def _cleanup_member(self, ns: str, member: dict[str, Any]) -> bool:
        if member.get("service") and member["service"] != st.NO_PORTS_SERVICE:
            self._delete("v1", "services", ns, member["service"])
        if member.get("pvc"):
            self._delete("v1", "persistentvolumeclaims", ns, member["pvc"])
        return True

    def _delete(self, api_version: str, plural: str, ns: str, name: str) -> None:
        try:
            self.rest.delete(api_version, plural, ns, name, propagation_policy="Background")
        except ApiException as exc:
            if exc.status != 404:
                raise


def start(cluster: ClusterHost) -> KubeDirectorController:
    """Start the simulated KubeDirector against the cluster's API server, as the cluster's `kubedirector_user`."""
    return KubeDirectorController(
        cluster.api_client(token=cluster.kubedirector_user), live_upgrade=cluster.server.kd_app_edits == live_upgrade.MODE
    ).start()
