"""Pod and PodSpec validation, including the pod update rule, worded like pkg/apis/core/validation."""

from __future__ import annotations

import copy
import json
from typing import Any

from kdsim import namerules
from kdsim.validation import meta
from kubeplumb import fielderrors as fe
from kubeplumb.fielderrors import FieldError

RESTART_POLICIES = ["Always", "OnFailure", "Never"]
DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
UPDATABLE_POD_FIELDS = ",".join(
    [
        "`spec.containers[*].image`",
        "`spec.initContainers[*].image`",
        "`spec.activeDeadlineSeconds`",
        "`spec.tolerations` (only additions to existing tolerations)",
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
    ]
)
_VOLUME_SOURCES = frozenset(
    {
        "hostPath",
        "emptyDir",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "secret",
        "nfs",
        "iscsi",
        "glusterfs",
        "persistentVolumeClaim",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "downwardAPI",
        "fc",
        "azureFile",
        "configMap",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "photonPersistentDisk",
        "projected",
        "portworxVolume",
        "scaleIO",
        "storageos",
        "csi",
        "ephemeral",
        "image",
    }
)


def _volumes(volumes: list[Any], path: str) -> tuple[set[str], list[FieldError]]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, vol in enumerate(volumes):
        p = fe.index(path, i)
        name = str(vol.get("name", "")) if isinstance(vol, dict) else ""
        if not name:
            errs.append(fe.required(fe.child(p, "name"), ""))
        else:
            errs.extend(fe.invalid(fe.child(p, "name"), name, m) for m in namerules.is_dns1123_label(name))
            if name in seen:
                errs.append(fe.duplicate(fe.child(p, "name"), name))
            seen.add(name)
        sources = [k for k in (vol or {}) if k in _VOLUME_SOURCES]
        if not sources:
            errs.append(fe.required(p, "must specify a volume type"))
        elif len(sources) > 1:
            errs.append(fe.forbidden(fe.child(p, sources[1]), "may not specify more than 1 volume type"))
    return seen, errs


def _container(c: dict[str, Any], path: str, volumes: set[str], require_image: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    if require_image and not c.get("image"):
        errs.append(fe.required(fe.child(path, "image"), ""))
    elif isinstance(c.get("image"), str) and c["image"] != c["image"].strip():
        errs.append(fe.invalid(fe.child(path, "image"), c["image"], "must not have leading or trailing whitespace"))
    port_names: set[str] = set()
    for i, port in enumerate(c.get("ports") or []):
        p = fe.index(fe.child(path, "ports"), i)
        if port.get("name"):
            errs.extend(fe.invalid(fe.child(p, "name"), port["name"], m) for m in namerules.is_valid_port_name(port["name"]))
            if port["name"] in port_names:
                errs.append(fe.duplicate(fe.child(p, "name"), port["name"]))
            port_names.add(port["name"])
        number = port.get("containerPort", 0)
        if not number:
            errs.append(fe.required(fe.child(p, "containerPort"), ""))
        else:
            errs.extend(fe.invalid(fe.child(p, "containerPort"), number, m) for m in namerules.is_valid_port_num(number))
        if port.get("hostPort"):
            errs.extend(
                fe.invalid(fe.child(p, "hostPort"), port["hostPort"], m) for m in namerules.is_valid_port_num(port["hostPort"])
            )
        protocol = port.get("protocol", "")
        if not protocol:
            errs.append(fe.required(fe.child(p, "protocol"), ""))
        elif protocol not in PROTOCOLS:
            errs.append(fe.not_supported(fe.child(p, "protocol"), protocol, PROTOCOLS))
    for i, var in enumerate(c.get("env") or []):
        p = fe.index(fe.child(path, "env"), i)
        name = str(var.get("name", ""))
        if not name:
            errs.append(fe.required(fe.child(p, "name"), ""))
        else:
            errs.extend(fe.invalid(fe.child(p, "name"), name, m) for m in namerules.is_env_var_name(name))
    mount_paths: set[str] = set()
    for i, mount in enumerate(c.get("volumeMounts") or []):
        p = fe.index(fe.child(path, "volumeMounts"), i)
        name = str(mount.get("name", ""))
        if not name:
            errs.append(fe.required(fe.child(p, "name"), ""))
        elif name not in volumes:
            errs.append(fe.not_found(fe.child(p, "name"), name))
        mount_path = str(mount.get("mountPath", ""))
        if not mount_path:
            errs.append(fe.required(fe.child(p, "mountPath"), ""))
        elif mount_path in mount_paths:
            errs.append(fe.invalid(fe.child(p, "mountPath"), mount_path, "must be unique"))
        mount_paths.add(mount_path)
    return errs


def _containers(
    items: Any, path: str, volumes: set[str], seen: set[str], required: bool, require_image: bool
) -> list[FieldError]:
    errs: list[FieldError] = []
    if required and not items:
        return [fe.required(path, "")]
    for i, c in enumerate(items or []):
        p = fe.index(path, i)
        if not isinstance(c, dict):
            continue
        name = str(c.get("name", ""))
        if not name:
            errs.append(fe.required(fe.child(p, "name"), ""))
        else:
            errs.extend(fe.invalid(fe.child(p, "name"), name, m) for m in namerules.is_dns1123_label(name))
            if name in seen:
                errs.append(fe.duplicate(fe.child(p, "name"), name))
            seen.add(name)
        errs.extend(_container(c, p, volumes, require_image))
    return errs


def validate_pod_spec(spec: Any, path: str = "spec", *, require_image: bool = True) -> list[FieldError]:
    """ValidatePodSpec: volumes, containers, restart and DNS policy, grace period."""
    spec = spec if isinstance(spec, dict) else {}
    volumes, errs = _volumes(spec.get("volumes") or [], fe.child(path, "volumes"))
    seen: set[str] = set()
    errs += _containers(spec.get("containers"), fe.child(path, "containers"), volumes, seen, True, require_image)
    errs += _containers(spec.get("initContainers"), fe.child(path, "initContainers"), volumes, seen, False, require_image)
    policy = spec.get("restartPolicy", "")
    if not policy:
        errs.append(fe.required(fe.child(path, "restartPolicy"), ""))
    elif policy not in RESTART_POLICIES:
        errs.append(fe.not_supported(fe.child(path, "restartPolicy"), policy, RESTART_POLICIES))
    dns = spec.get("dnsPolicy", "")
    if not dns:
        errs.append(fe.required(fe.child(path, "dnsPolicy"), ""))
    elif dns not in DNS_POLICIES:
        errs.append(fe.not_supported(fe.child(path, "dnsPolicy"), dns, DNS_POLICIES))
    errs += meta.nonnegative(spec.get("terminationGracePeriodSeconds"), fe.child(path, "terminationGracePeriodSeconds"))
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and deadline <= 0:
        errs.append(fe.invalid(fe.child(path, "activeDeadlineSeconds"), deadline, "must be between 1 and 2147483647, inclusive"))
    return errs


def validate_pod(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if old is None:
        errs = meta.validate_object_meta(obj.get("metadata"), True, meta.dns_subdomain_name)
        return errs + validate_pod_spec(obj.get("spec"))
    errs = meta.validate_object_meta_update(obj.get("metadata"), old.get("metadata"))
    return errs + validate_pod_spec_update(obj.get("spec") or {}, old.get("spec") or {})


def validate_pod_spec_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """ValidatePodUpdate's spec rule: only images, activeDeadlineSeconds, added tolerations may change."""
    for key in ("containers", "initContainers"):
        if len(new.get(key) or []) != len(old.get(key) or []):
            return [fe.forbidden(fe.child("spec", key), "pod updates may not add or remove containers")]
    munged = copy.deepcopy(new)
    for key in ("containers", "initContainers"):
        for c, o in zip(munged.get(key) or [], old.get(key) or []):
            if "image" in o:
                c["image"] = o["image"]
            else:
                c.pop("image", None)
    for key in ("activeDeadlineSeconds", "tolerations"):
        if key in old:
            munged[key] = old[key]
        else:
            munged.pop(key, None)
    old_grace = old.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    errs: list[FieldError] = []
    old_tolerations = old.get("tolerations") or []
    if any(t not in (new.get("tolerations") or []) for t in old_tolerations):
        errs.append(
            fe.forbidden(fe.child("spec", "tolerations"), "existing toleration can not be modified except its tolerationSeconds")
        )
    if not meta.semantic_equal(munged, old):
        errs.append(
            fe.forbidden(
                "spec",
                f"pod updates may not change fields other than {UPDATABLE_POD_FIELDS}\n{spec_diff('core.PodSpec', old, munged)}",
            )
        )
    return errs


def spec_diff(type_name: str, old: dict[str, Any], new: dict[str, Any]) -> str:
    """A short cmp.Diff-like rendering of the top-level fields that differ."""
    lines = [f"  {type_name}{{"]
    for key in sorted(set(old) | set(new)):
        if json.dumps(old.get(key), sort_keys=True) == json.dumps(new.get(key), sort_keys=True):
            continue
        if key in old:
            lines.append(f"- \t{key}: {json.dumps(old[key], sort_keys=True)},")
        if key in new:
            lines.append(f"+ \t{key}: {json.dumps(new[key], sort_keys=True)},")
    lines.append("  }")
    return "\n".join(lines)
