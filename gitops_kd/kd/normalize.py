"""KubeDirector's stored form of a KDApp / KDCluster spec: what its mutating webhook writes in its place (pure).

Facts from KubeDirector's source (pkg/validator):
- app.go validateRoles: the app-level defaults (defaultImageRepoTag, defaultConfigPackage, defaultPersistDirs,
  defaultEventList, defaultMaxLogSizeDump) are removed from the stored spec and written into every role that
  does not set the field itself: a role without the configPackage key gets the default package, else `null`;
  every role without maxLogSizeDump gets the default (or shared.DefaultMaxLogSizeDump = 256). A role with no
  image at all is refused (noDefaultImage) and nothing is patched.
- cluster.go admitClusterCR only ADDS to a KDCluster (appCatalog, members, storageClassName, serviceType,
  namingScheme, a role's secret from defaultSecret): a comparison that ignores extra live keys holds without
  them. The one field KD rewrites is a role's secretKeys (encryptSecretKeys: each `value` replaced by an
  `encryptedValue`), so the stored form keeps only each secret key's name.
Comparing Git with this form, not with the manifest's spelling, lets "the live spec carries Git's" hold once
KubeDirector has stored the object (no endless re-apply).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.kd.layout import KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.spec.freeze import thaw

MAX_LOG_SIZE_DUMP = 256  # pkg/shared/types.go DefaultMaxLogSizeDump
APP_DEFAULT_FIELDS = {  # top-level default -> the role field KD writes it into (app.go validateRoles)
    "defaultImageRepoTag": "imageRepoTag",
    "defaultConfigPackage": "configPackage",
    "defaultPersistDirs": "persistDirs",
    "defaultEventList": "eventList",
    "defaultMaxLogSizeDump": "maxLogSizeDump",
}


def _package_info(package: Any) -> dict[str, Any] | None:
    """A default config package as KD writes it into a role: its Go struct SetupPackageInfo marshalled (both fields,
    no omitempty: kubedirectorapp_types.go), other keys dropped; null stays null."""
    if not isinstance(package, Mapping):
        return None
    return {"packageURL": str(package.get("packageURL") or ""), "useNewSetupLayout": bool(package.get("useNewSetupLayout"))}


def stored_app_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The KDApp spec KubeDirector stores for ``spec`` (plain values; ``spec`` may be frozen)."""
    out: dict[str, Any] = thaw(spec)
    defaults = {field: out.pop(field) for field in APP_DEFAULT_FIELDS if field in out}
    roles = [r for r in out.get("roles") or [] if isinstance(r, dict)]
    if any(r.get("imageRepoTag") is None and defaults.get("defaultImageRepoTag") is None for r in roles):
        return thaw(spec)  # type: ignore[no-any-return]  # KD refuses it (noDefaultImage): no patch
    for role in roles:
        for default, field in APP_DEFAULT_FIELDS.items():
            if field == "configPackage":
                if field not in role:  # absent only: an explicit null is "set" (SetupPackage.IsSet)
                    role[field] = _package_info(defaults.get(default))
            elif field == "maxLogSizeDump":
                if role.get(field) is None:
                    role[field] = defaults[default] if defaults.get(default) is not None else MAX_LOG_SIZE_DUMP
            elif role.get(field) is None and defaults.get(default) is not None:
                role[field] = thaw(defaults[default])
    return out


def stored_cluster_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The part of the KDCluster spec KubeDirector stores that is known offline: ``spec`` with each role's
    secretKeys reduced to their names (KD replaces the values by encrypted ones)."""
    out: dict[str, Any] = thaw(spec)
    for role in out.get("roles") or []:
        if isinstance(role, dict) and isinstance(role.get("secretKeys"), list):
            role["secretKeys"] = [{"name": k.get("name")} if isinstance(k, dict) else k for k in role["secretKeys"]]
    return out


def stored_spec(kind: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """stored_app_spec / stored_cluster_spec by kind; other kinds as written."""
    if kind == KDAPP_KIND:
        return stored_app_spec(spec)
    if kind == KDCLUSTER_KIND:
        return stored_cluster_spec(spec)
    return thaw(spec)  # type: ignore[no-any-return]


def stored_manifest(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest with its spec in KubeDirector's stored form (metadata as written)."""
    out: dict[str, Any] = thaw(manifest)
    if isinstance(out.get("spec"), dict):
        out["spec"] = stored_spec(str(out.get("kind", "")), out["spec"])
    return out


CLUSTER_FILLED = ("appCatalog", "serviceType", "namingScheme")  # validateApp, addServiceType, validateNamingScheme
ROLE_FILLED = ("members", "secret")  # validateCardinality, validateSecrets


def with_kd_filled(spec: Mapping[str, Any], live_spec: Mapping[str, Any]) -> dict[str, Any]:
    """A KDCluster spec to send as an UPDATE: ``spec`` with what KD's webhook filled in at create (and Git leaves
    out) taken from ``live_spec``. KD judges an UPDATE's request before mutating it (cluster.go admitClusterCR:
    validateGeneralClusterChanges, validateRoleChanges compare it with the stored object), so a request without
    the stored appCatalog is refused `The appCatalog property is read-only.`, and a role without its stored
    storageClassName or secret as a change of a role with members."""
    out: dict[str, Any] = thaw(spec)
    for field in CLUSTER_FILLED:
        if out.get(field) is None and live_spec.get(field) is not None:
            out[field] = thaw(live_spec[field])
    live_roles = {r.get("id"): r for r in live_spec.get("roles") or () if isinstance(r, Mapping)}
    for role in out.get("roles") or ():
        live = live_roles.get(role.get("id")) if isinstance(role, dict) else None
        if live is None:
            continue
        for field in ROLE_FILLED:
            if role.get(field) is None and live.get(field) is not None:
                role[field] = thaw(live[field])
        storage, live_storage = role.get("storage"), live.get("storage")
        if (
            isinstance(storage, dict)
            and isinstance(live_storage, Mapping)
            and storage.get("storageClassName") is None
            and live_storage.get("storageClassName") is not None
        ):
            storage["storageClassName"] = live_storage["storageClassName"]
    return out


def without_kd_defaults(live_role: Mapping[str, Any], desired_role: Mapping[str, Any]) -> dict[str, Any]:
    """A live KDCluster role without what KD's webhook filled in where Git's role leaves it out (members:
    validateCardinality; storage.storageClassName: validateRoleStorageClass; secret: validateSecrets), so a
    comparison of roles shows Git's changes only."""
    out: dict[str, Any] = thaw(live_role)
    for field in ROLE_FILLED:
        if desired_role.get(field) is None:
            out.pop(field, None)
    storage, wanted = out.get("storage"), desired_role.get("storage")
    if isinstance(storage, dict) and isinstance(wanted, Mapping) and wanted.get("storageClassName") is None:
        storage.pop("storageClassName", None)
    return out
