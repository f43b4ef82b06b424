"""Pod sandboxes on the simulated node: per-container rootfs copies, volumes as directories, container env.

Layout under the node's state dir:
  kubelet/pods/<pod-uid>/containers/<container>/rootfs   copy of the image rootfs (one per container)
  kubelet/pods/<pod-uid>/volumes/<kind>/<volume>          emptyDir / configMap / secret volumes
  volumes/<namespace>/<pvc-name>                          PVC-backed volumes: survive pod deletion
"""

from __future__ import annotations

import base64
import logging
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kdsim.kubelet.runner import Mount

log = logging.getLogger(__name__)

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
Lookup = Callable[[str, str, str], "dict[str, Any] | None"]  # (plural, namespace, name) -> object


class VolumeError(Exception):
    """A volume cannot be set up yet (missing claim, configMap, ...): the pod waits, as on a real node."""


@dataclass(frozen=True)
class NodeDirs:
    """Where the node keeps pod sandboxes and persistent volumes."""

    root: Path

    @property
    def pods(self) -> Path:
        return self.root / "kubelet" / "pods"

    def pod(self, uid: str) -> Path:
        return self.pods / uid

    def pvc(self, namespace: str, claim: str) -> Path:
        return self.root / "volumes" / namespace / claim

    def container_rootfs(self, uid: str, container: str) -> Path:
        return self.pod(uid) / "containers" / container / "rootfs"


def prepare_rootfs(dirs: NodeDirs, uid: str, container: str, image_root: Path) -> Path:
    """Copy the image rootfs for one container of a pod (once); return it."""
    target = dirs.container_rootfs(uid, container)
    if not target.is_dir():
        staging = target.with_name("rootfs.tmp")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(image_root, staging, symlinks=True)
        staging.rename(target)
    return target


def remove_sandbox(dirs: NodeDirs, uid: str) -> None:
    """Delete a pod's sandbox (rootfs copies, emptyDirs); PVC directories are untouched."""
    shutil.rmtree(dirs.pod(uid), ignore_errors=True)


def _write_items(target: Path, data: Mapping[str, bytes], items: list[dict[str, Any]] | None) -> None:
    target.mkdir(parents=True, exist_ok=True)
    chosen = {i["key"]: i.get("path") or i["key"] for i in items} if items else {k: k for k in data}
    for key, rel in chosen.items():
        if key not in data:
            continue
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data[key])


def prepare_volumes(dirs: NodeDirs, pod: Mapping[str, Any], lookup: Lookup) -> dict[str, Path]:
    """Materialise the pod's volumes; return volume name -> host directory. Raises VolumeError to wait."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    namespace, uid = meta.get("namespace") or "default", meta["uid"]
    result: dict[str, Path] = {}
    for vol in spec.get("volumes") or []:
        name = vol["name"]
        if "persistentVolumeClaim" in vol:
            claim = vol["persistentVolumeClaim"]["claimName"]
            if lookup("persistentvolumeclaims", namespace, claim) is None:
                raise VolumeError(f'persistentvolumeclaim "{claim}" not found')
            path = dirs.pvc(namespace, claim)
        elif "configMap" in vol:
            src = vol["configMap"]
            cm = lookup("configmaps", namespace, src["name"])
            if cm is None and not src.get("optional"):
                raise VolumeError(f'configmap "{src["name"]}" not found')
            data = {k: v.encode() for k, v in ((cm or {}).get("data") or {}).items()}
            data.update({k: base64.b64decode(v) for k, v in ((cm or {}).get("binaryData") or {}).items()})
            path = dirs.pod(uid) / "volumes" / "configmap" / name
            _write_items(path, data, src.get("items"))
        elif "secret" in vol:
            src = vol["secret"]
            secret = lookup("secrets", namespace, src["secretName"])
            if secret is None and not src.get("optional"):
                raise VolumeError(f'secret "{src["secretName"]}" not found')
            data = {k: base64.b64decode(v) for k, v in ((secret or {}).get("data") or {}).items()}
            data.update({k: v.encode() for k, v in ((secret or {}).get("stringData") or {}).items()})
            path = dirs.pod(uid) / "volumes" / "secret" / name
            _write_items(path, data, src.get("items"))
        else:
            if "emptyDir" not in vol:
                log.warning("pod %s/%s: volume %s of an unsupported kind is an empty dir", namespace, meta.get("name"), name)
            path = dirs.pod(uid) / "volumes" / "empty-dir" / name
        path.mkdir(parents=True, exist_ok=True)
        result[name] = path
    return result


def container_mounts(container: Mapping[str, Any], volumes: Mapping[str, Path]) -> tuple[Mount, ...]:
    """The container's volumeMounts as host binds (subPath dirs created as the kubelet does)."""
    mounts = []
    for vm in container.get("volumeMounts") or []:
        base = volumes.get(vm["name"])
        if base is None:
            raise VolumeError(f'container {container["name"]}: volumeMount "{vm["name"]}" has no volume')
        source = base
        sub = vm.get("subPath") or ""
        if sub:
            if sub.startswith("/") or ".." in Path(sub).parts:
                raise VolumeError(f'container {container["name"]}: subPath "{sub}" must be relative without ".."')
            source = base / sub
            if not source.exists():
                source.mkdir(parents=True, exist_ok=True)
        mounts.append(Mount(source, vm["mountPath"], bool(vm.get("readOnly"))))
    return tuple(mounts)


def _field_ref(pod: Mapping[str, Any], path: str) -> str:
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
    }
    if path in simple:
        return str(simple[path] or "")
    for prefix, source in (("metadata.labels", meta.get("labels")), ("metadata.annotations", meta.get("annotations"))):
        if path.startswith(prefix + "['") and path.endswith("']"):
            return str((source or {}).get(path[len(prefix) + 2 : -2], ""))
    return ""


def container_env(
    pod: Mapping[str, Any], container: Mapping[str, Any], lookup: Lookup, service_host: str = "10.96.0.1"
) -> dict[str, str]:
    """The environment a kubelet gives the container: PATH, HOSTNAME, KUBERNETES_*, env and valueFrom."""
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    env = {
        "PATH": DEFAULT_PATH,
        "HOSTNAME": (pod.get("spec") or {}).get("hostname") or meta.get("name", ""),
        "HOME": "/root",
        "KUBERNETES_SERVICE_HOST": service_host,
        "KUBERNETES_SERVICE_PORT": "443",
        "KUBERNETES_SERVICE_PORT_HTTPS": "443",
        "KUBERNETES_PORT": f"tcp://{service_host}:443",
        "KUBERNETES_PORT_443_TCP": f"tcp://{service_host}:443",
        "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
        "KUBERNETES_PORT_443_TCP_PORT": "443",
        "KUBERNETES_PORT_443_TCP_ADDR": service_host,
    }
    for src in container.get("envFrom") or []:
        prefix = src.get("prefix", "")
        if "configMapRef" in src:
            cm = lookup("configmaps", namespace, src["configMapRef"]["name"]) or {}
            env.update({prefix + k: v for k, v in (cm.get("data") or {}).items()})
        elif "secretRef" in src:
            secret = lookup("secrets", namespace, src["secretRef"]["name"]) or {}
            env.update({prefix + k: base64.b64decode(v).decode(errors="replace") for k, v in (secret.get("data") or {}).items()})
    for item in container.get("env") or []:
        value_from = item.get("valueFrom")
        if value_from is None:
            env[item["name"]] = _expand(str(item.get("value", "")), env)
        elif "fieldRef" in value_from:
            env[item["name"]] = _field_ref(pod, value_from["fieldRef"].get("fieldPath", ""))
        elif "configMapKeyRef" in value_from:
            ref = value_from["configMapKeyRef"]
            cm = lookup("configmaps", namespace, ref["name"]) or {}
            env[item["name"]] = str((cm.get("data") or {}).get(ref["key"], ""))
        elif "secretKeyRef" in value_from:
            ref = value_from["secretKeyRef"]
            secret = lookup("secrets", namespace, ref["name"]) or {}
            raw = (secret.get("data") or {}).get(ref["key"])
            env[item["name"]] = base64.b64decode(raw).decode(errors="replace") if raw else ""
    return env


def _expand(value: str, env: Mapping[str, str]) -> str:
    """$(VAR) expansion of env values, as the kubelet does ($$ escapes)."""
    out, i = [], 0
    while i < len(value):
        if value.startswith("$$", i):
            out.append("$")
            i += 2
        elif value.startswith("$(", i) and (end := value.find(")", i)) != -1 and value[i + 2 : end] in env:
            out.append(env[value[i + 2 : end]])
            i = end + 1
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def container_argv(container: Mapping[str, Any], env: Mapping[str, str]) -> tuple[str, ...]:
    """command + args with $(VAR) expansion (the image has no entrypoint metadata in this simulation)."""
    return tuple(_expand(str(a), env) for a in [*(container.get("command") or []), *(container.get("args") or [])])
