"""The parts of a role's pod template that gitops-kd owns, rendered from the desired KDApp and KDCluster (pure).

Owned (everything else in the live template — KubeDirector's env, tmpfs volumes, labels, ... — is kept):
- template annotation ``gitops-kd.io/app-version``: the app version (so every version is a new revision);
- app container ``app``: image, resources, ports (one per service endpoint of the role), and with storage
  the persisted-dir volumeMounts of PVC template ``p`` (subPath) plus ``.gitops-kd`` at /var/lib/gitops-kd;
- with storage, init container ``init``: image, resources, ``/bin/sh -c <INIT_SCRIPT>`` and its env.
"""

from __future__ import annotations

from typing import Any

from gitops_kd.constants import APP_VERSION_ANNOTATION
from gitops_kd.kd import layout
from gitops_kd.render.init_script import ENV_DIRS, ENV_FROM_VERSION, ENV_VERSION, INIT_SCRIPT, STATE_DIR, STATE_MOUNT, dirs_env
from gitops_kd.spec.freeze import thaw
from gitops_kd.spec.model import KDApp, KDCluster
from gitops_kd.spec.upgrade import KEEP, PersistRules

OWNED_ENV_PREFIX = "GITOPS_KD_"


def dir_actions(dirs: tuple[str, ...], rules: PersistRules | None) -> tuple[tuple[str, str], ...]:
    """(dir, action) for each persisted dir, plus the finer rules listed below them, sorted by dir."""
    if rules is None:
        return tuple(sorted((d, KEEP) for d in dirs))
    out: dict[str, str] = {}
    for d in dirs:
        out[d] = rules.action_for(d).action
        for inner, action in rules.actions_within(d):
            out[inner] = action.action
    return tuple(sorted(out.items()))


def container_ports(app: KDApp, role_id: str) -> list[dict[str, Any]]:
    """containerPort per service endpoint of the role, in the app's services order (as KubeDirector)."""
    role = app.role(role_id)
    return [{"containerPort": s.port, "name": s.id} for s in app.services if s.id in role.service_ids and s.port is not None]


def service_ports(app: KDApp, role_id: str) -> list[dict[str, Any]]:
    """spec.ports of a member Service of the role: name ``<scheme>-<id>`` / ``generic-<id>``, port."""
    role = app.role(role_id)
    return [
        {"name": layout.service_port_name(s.id, s.url_scheme), "port": s.port}
        for s in app.services
        if s.id in role.service_ids and s.port is not None
    ]


def has_storage(cluster: KDCluster, role_id: str) -> bool:
    """True when the cluster gives the role a PVC (spec.roles[].storage)."""
    return cluster.role(role_id).storage_size is not None


def owned_template(
    app: KDApp, cluster: KDCluster, role_id: str, *, from_version: str | None, rules: PersistRules | None
) -> dict[str, Any]:
    """The owned fields of role ``role_id``'s pod template, shaped as a (partial) pod template.

    ``from_version`` and ``rules`` describe the version change the data-handling init container
    performs (None: no change known — every dir is kept). Raises KeyError naming the role if the app
    or cluster lacks it, ValueError naming the dir for a dir the init script cannot carry.
    """
    role = app.role(role_id)
    cluster_role = cluster.role(role_id)
    if not role.image:
        raise ValueError(f"{app.source}: spec.roles[{role_id}].imageRepoTag: no image and no defaultImageRepoTag")
    resources = thaw(cluster_role.resources)
    app_container: dict[str, Any] = {
        "name": layout.APP_CONTAINER,
        "image": role.image,
        "resources": resources,
        "ports": container_ports(app, role_id),
    }
    spec: dict[str, Any] = {"containers": [app_container]}
    if has_storage(cluster, role_id):
        dirs = role.effective_persist_dirs
        mounts = [{"name": layout.PVC_TEMPLATE, "mountPath": d, "subPath": d.lstrip("/")} for d in dirs]
        mounts.append({"name": layout.PVC_TEMPLATE, "mountPath": STATE_MOUNT, "subPath": STATE_DIR})
        app_container["volumeMounts"] = mounts
        env = [
            {"name": ENV_VERSION, "value": app.version},
            {"name": ENV_FROM_VERSION, "value": from_version or ""},
            {"name": ENV_DIRS, "value": dirs_env(dir_actions(dirs, rules))},
        ]
        spec["initContainers"] = [
            {
                "name": layout.INIT_CONTAINER,
                "image": role.image,
                "resources": thaw(resources),
                "command": ["/bin/sh"],
                "args": ["-c", INIT_SCRIPT],
                "env": env,
            }
        ]
    return {"metadata": {"annotations": {APP_VERSION_ANNOTATION: app.version}}, "spec": spec}
