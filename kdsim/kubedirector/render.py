"""KDApp + KDCluster -> the StatefulSets and Services KubeDirector creates (pkg/executor), as plain dicts (pure)."""

from __future__ import annotations

from typing import Any

from kdsim.kubedirector import names
from kdsim.kubedirector.model import App, AppRole, Cluster, ClusterRole, SpecError
from kdsim.kubedirector.persist import init_script, persist_dirs
from kubeplumb.names import POD_NAME_LABEL

TMPFS_SIZE = "20Gi"
CGROUP_FS = "/sys/fs/cgroup"
SYSTEMD_FS = "/sys/fs/cgroup/systemd"
CONFIG_CLI_LOC = "/usr/local"
HEADLESS_PORT = {"name": "port", "port": 8888}  # KD: "not used"


def owner_references(cluster: Cluster) -> list[dict[str, Any]]:
    """The single controller reference KD puts on everything it creates (blockOwnerDeletion false)."""
    return [
        {
            "apiVersion": names.API_VERSION,
            "kind": names.KDCLUSTER_KIND,
            "name": cluster.name,
            "uid": cluster.uid,
            "controller": True,
            "blockOwnerDeletion": False,
        }
    ]


def cluster_labels(cluster: Cluster) -> dict[str, str]:
    return {names.CLUSTER_LABEL: cluster.name, names.APP_LABEL: cluster.app_id, names.APP_CATALOG_LABEL: cluster.app_catalog}


def statefulset_labels(cluster: Cluster, role: ClusterRole) -> dict[str, str]:
    return {**cluster_labels(cluster), names.ROLE_LABEL: role.id, names.HEADLESS_LABEL: cluster.name}


def pod_labels(cluster: Cluster, role: ClusterRole) -> dict[str, str]:
    """StatefulSet labels plus the role's podLabels; also the StatefulSet's selector."""
    return {**statefulset_labels(cluster, role), **role.pod_labels}


def service_labels(cluster: Cluster, role: ClusterRole | None) -> dict[str, str]:
    if role is None:
        return cluster_labels(cluster)
    return {**cluster_labels(cluster), names.ROLE_LABEL: role.id, **role.service_labels}


def cluster_annotations(app: App) -> dict[str, str]:
    return {names.APP_PRETTY_NAME_ANNOTATION: app.pretty_name}


def _app_role(app: App, role: ClusterRole) -> AppRole:
    app_role = app.role(role.id)
    if app_role is None:
        raise SpecError(f"KubeDirectorApp {app.name}: spec.roles: no role {role.id!r}")
    return app_role


def _env(role: ClusterRole, app_role: AppRole) -> list[dict[str, Any]]:
    env = [dict(e) for e in role.env]
    if app_role.setup_package is not None and app_role.setup_package.use_new_setup_layout:
        env.append({"name": "PYTHONUSERBASE", "value": CONFIG_CLI_LOC})
    requests = (role.resources or {}).get("requests") or {}
    wants_gpu = any(k.startswith("nvidia.com/") and str(v) not in ("0", "") for k, v in requests.items())
    if not wants_gpu:
        env.append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"})
    return env


def _volumes(
    cluster: Cluster, app: App, role: ClusterRole, dirs: tuple[str, ...]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    mounts: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    if role.storage is not None:
        mounts += [{"name": names.PVC_TEMPLATE, "mountPath": d, "subPath": d[1:]} for d in dirs]
    for vol, path in (("tmpfs-tmp", "/tmp"), ("tmpfs-run", "/run"), ("tmpfs-run-lock", "/run/lock")):
        mounts.append({"name": vol, "mountPath": path})
        volumes.append({"name": vol, "emptyDir": {"medium": "Memory", "sizeLimit": TMPFS_SIZE}})
    if role.secret:
        vol = "secret-vol-" + str(role.secret["name"])
        secret_ro = {"readOnly": True} if role.secret.get("readOnly") else {}
        mounts.append({"name": vol, "mountPath": role.secret["mountPath"], **secret_ro})
        source: dict[str, Any] = {"secretName": role.secret["name"]}
        if role.secret.get("defaultMode") is not None:
            source["defaultMode"] = role.secret["defaultMode"]
        volumes.append({"name": vol, "secret": source})
    for i, proj in enumerate(role.volume_projections):
        vol = f"projected-vol-{i}"
        read_only = bool(proj.get("readOnly"))
        mounts.append({"name": vol, "mountPath": proj["mountPath"], **({"readOnly": True} if read_only else {})})
        volumes.append(
            {"name": vol, "persistentVolumeClaim": {"claimName": proj["pvcName"], **({"readOnly": True} if read_only else {})}}
        )
    if role.shared_memory:
        mounts.append({"name": "shmem", "mountPath": "/dev/shm"})
        volumes.append({"name": "shmem", "emptyDir": {"medium": "Memory", "sizeLimit": role.shared_memory}})
    if app.systemd_required:  # KD without native systemd support (its default) mounts the host cgroup fs
        mounts += [{"name": "cgroupfs", "mountPath": CGROUP_FS, "readOnly": True}, {"name": "systemd", "mountPath": SYSTEMD_FS}]
        volumes += [{"name": "cgroupfs", "hostPath": {"path": CGROUP_FS}}, {"name": "systemd", "hostPath": {"path": SYSTEMD_FS}}]
    return mounts, volumes


def render_statefulset(
    cluster: Cluster, app: App, role: ClusterRole, *, cluster_service: str, name: str | None = None, replicas: int = 0
) -> dict[str, Any]:
    """The StatefulSet KD creates for a role: named `name`, or with KD's generateName when name is None.

    KD creates it with 0 replicas and raises replicas as members are added. No updateStrategy is set.
    """
    app_role = _app_role(app, role)
    if not app_role.image:
        raise SpecError(f"KubeDirectorApp {app.name}: spec.roles[{role.id}].imageRepoTag: no image and no defaultImageRepoTag")
    dirs = persist_dirs(app_role)
    mounts, volumes = _volumes(cluster, app, role, dirs)
    container: dict[str, Any] = {
        "name": names.APP_CONTAINER,
        "image": app_role.image,
        "resources": dict(role.resources or {}),
        "env": _env(role, app_role),
        "volumeMounts": mounts,
    }
    if app_role.ports:
        container["ports"] = [{"containerPort": p.port, "name": p.id} for p in app_role.ports]
    if app.capabilities:
        container["securityContext"] = {"capabilities": {"add": list(app.capabilities)}}
    if app_role.tty:
        container["tty"] = True
    if app_role.stdin:
        container["stdin"] = True
    pod_spec: dict[str, Any] = {
        "automountServiceAccountToken": bool(role.service_account),
        "containers": [container],
        "volumes": volumes,
    }
    if role.service_account:
        pod_spec["serviceAccountName"] = role.service_account
    if role.affinity:
        pod_spec["affinity"] = dict(role.affinity)
    spec: dict[str, Any] = {
        "podManagementPolicy": "Parallel",
        "replicas": replicas,
        "serviceName": cluster_service,
        "selector": {"matchLabels": pod_labels(cluster, role)},
        "template": {
            "metadata": {
                "labels": pod_labels(cluster, role),
                "annotations": {**cluster_annotations(app), **role.pod_annotations},
            },
            "spec": pod_spec,
        },
    }
    if role.storage is not None:
        pod_spec["initContainers"] = [
            {
                "name": names.INIT_CONTAINER,
                "image": app_role.image,
                "command": ["/bin/sh"],
                "args": ["-c", init_script(dirs)],
                "resources": dict(role.resources or {}),
                "securityContext": {"runAsUser": 0},
                "volumeMounts": [{"name": names.PVC_TEMPLATE, "mountPath": "/mnt"}],
            }
        ]
        claim_spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": role.storage.size}}}
        if role.storage.storage_class:
            claim_spec["storageClassName"] = role.storage.storage_class
        spec["volumeClaimTemplates"] = [{"metadata": {"name": names.PVC_TEMPLATE}, "spec": claim_spec}]
    meta: dict[str, Any] = {
        "namespace": cluster.namespace,
        "labels": statefulset_labels(cluster, role),
        "annotations": cluster_annotations(app),
        "ownerReferences": owner_references(cluster),
    }
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = names.statefulset_generate_name(cluster.name, role.id, cluster.naming_scheme)
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta, "spec": spec}


def render_headless_service(cluster: Cluster, app: App, *, name: str | None = None) -> dict[str, Any]:
    """The cluster service: headless, selecting every member, publishing not-ready addresses."""
    meta: dict[str, Any] = {
        "namespace": cluster.namespace,
        "labels": service_labels(cluster, None),
        "annotations": cluster_annotations(app),
        "ownerReferences": owner_references(cluster),
    }
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = names.headless_generate_name(cluster.name, cluster.naming_scheme)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "clusterIP": "None",
            "selector": {names.HEADLESS_LABEL: cluster.name},
            "publishNotReadyAddresses": True,
            "ports": [dict(HEADLESS_PORT)],
        },
    }


def render_member_service(cluster: Cluster, app: App, role: ClusterRole, pod: str) -> dict[str, Any] | None:
    """A member's own Service exposing the role's service endpoints; None when the role exposes no port."""
    app_role = _app_role(app, role)
    if not app_role.ports:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": names.member_service_name(pod, cluster.naming_scheme),
            "namespace": cluster.namespace,
            "labels": service_labels(cluster, role),
            "annotations": {**cluster_annotations(app), **role.service_annotations},
            "ownerReferences": owner_references(cluster),
        },
        "spec": {
            "selector": {POD_NAME_LABEL: pod},
            "type": cluster.service_type,
            "publishNotReadyAddresses": True,
            "ports": [{"name": names.service_port_name(p.id, p.url_scheme), "port": p.port} for p in app_role.ports],
        },
    }
