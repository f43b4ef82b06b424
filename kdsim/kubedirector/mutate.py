"""What KubeDirector's mutating admission webhook writes into a KDApp / KDCluster before it is stored (pure).

Learned from KubeDirector's source (bluek8s/kubedirector master, pkg/validator):
- app.go validateRoles: the app-level defaults (defaultImageRepoTag, defaultConfigPackage, defaultPersistDirs,
  defaultEventList, defaultMaxLogSizeDump) are removed from the spec and copied into every role that lacks the
  field; a role without configPackage gets the default package or `null`; every role without maxLogSizeDump gets
  the default (shared.DefaultMaxLogSizeDump, 256). KD sends the patch only when it found no validation error.
- cluster.go admitClusterCR: validateApp (spec.appCatalog "local" / "system"), validateCardinality (a role's
  missing members = the app role's cardinality), validateRoleStorageClass (a role's storage without
  storageClassName gets the KubeDirectorConfig's class, else the cluster's default StorageClass, else KD refuses
  with NO_DEFAULT_STORAGE_CLASS), addServiceType, validateNamingScheme, validateSecrets (defaultSecret copied into
  roles without a secret). On UPDATE none of this runs when the spec is unchanged (the "shortcut").
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from kdsim.kubedirector import names

# pkg/validator/types.go noDefaultStorageClass / badDefaultStorageClass
NO_DEFAULT_STORAGE_CLASS = "storageClassName is not specified for one or more roles, and no default storage class is available."
INVALID_ROLE_STORAGE_CLASS = "Unable to fetch storageClassName(%s) for role(%s)."  # invalidRoleStorageClass
# pkg/observer/observer.go GetDefaultStorageClass: the first class carrying either annotation "true".
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class")
_APP_DEFAULTS = ("defaultImageRepoTag", "defaultConfigPackage", "defaultPersistDirs", "defaultEventList", "defaultMaxLogSizeDump")


def default_storage_class(classes: Sequence[Mapping[str, Any]]) -> str | None:
    """The name of the cluster's default StorageClass (observer.GetDefaultStorageClass), None without one."""
    for sc in classes:
        annotations = (sc.get("metadata") or {}).get("annotations") or {}
        if any(annotations.get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS):
            return str((sc.get("metadata") or {}).get("name", ""))
    return None


def setup_package_info(package: Any) -> dict[str, Any] | None:
    """The default config package as KD's patch carries it: the Go struct SetupPackageInfo marshalled, both fields
    always present (kubedirectorapp_types.go: no omitempty), anything else dropped; null stays null."""
    if not isinstance(package, Mapping):
        return None
    return {"packageURL": str(package.get("packageURL") or ""), "useNewSetupLayout": bool(package.get("useNewSetupLayout"))}


def app_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The KDApp spec KD stores (validateRoles' patch applied); a role KD would refuse (no image at all) leaves
    the spec as sent, since KD sends no patch then."""
    out = copy.deepcopy(dict(spec))
    image = out.pop("defaultImageRepoTag", None)
    has_package = "defaultConfigPackage" in out
    package = out.pop("defaultConfigPackage", None)
    persist = out.pop("defaultPersistDirs", None)
    events = out.pop("defaultEventList", None)
    max_log = out.pop("defaultMaxLogSizeDump", None)
    if max_log is None:
        max_log = names.DEFAULT_MAX_LOG_SIZE_DUMP
    roles = out.get("roles") or []
    if any(isinstance(r, Mapping) and r.get("imageRepoTag") is None and image is None for r in roles):
        return copy.deepcopy(dict(spec))  # noDefaultImage: a validation error, no patch
    for role in roles:
        if "configPackage" not in role:  # SetupPackage.IsSet is false only when the key is absent
            role["configPackage"] = setup_package_info(package) if has_package else None
        if role.get("imageRepoTag") is None:
            role["imageRepoTag"] = image
        if role.get("persistDirs") is None and persist is not None:
            role["persistDirs"] = list(persist)
        if role.get("eventList") is None and events is not None:
            role["eventList"] = list(events)
        if role.get("maxLogSizeDump") is None:
            role["maxLogSizeDump"] = max_log
    return out


def app_roles_cardinality(app: Mapping[str, Any]) -> dict[str, int]:
    """role id -> the number in its cardinality ("N" or "N+"), catalog.GetRoleCardinality."""
    out: dict[str, int] = {}
    for role in (app.get("spec") or {}).get("roles") or []:
        text = str(role.get("cardinality", ""))
        digits = text[:-1] if text.endswith("+") else text
        if digits.isdigit():
            out[str(role.get("id"))] = int(digits)
    return out


def cluster_spec(
    spec: Mapping[str, Any], *, namespace: str, app: Mapping[str, Any] | None, storage_class: str | None, classes: frozenset[str]
) -> tuple[dict[str, Any], list[str]]:
    """(the KDCluster spec KD stores, KD's validation errors among those emulated here). ``app`` is the KDApp KD
    found (catalog.FindApp); ``storage_class`` the class KD would default to (KubeDirectorConfig, else the
    cluster's default StorageClass); ``classes`` the StorageClasses that exist. With errors, KD sends no patch:
    the spec comes back as sent."""
    out = copy.deepcopy(dict(spec))
    errors: list[str] = []
    if app is not None and out.get("appCatalog") is None:
        same = (app.get("metadata") or {}).get("namespace") == namespace
        out["appCatalog"] = names.CATALOG_LOCAL if same else names.CATALOG_SYSTEM
    cardinality = app_roles_cardinality(app) if app is not None else {}
    roles = [r for r in out.get("roles") or [] if isinstance(r, dict)]
    for role in roles:
        if role.get("members") is None and str(role.get("id")) in cardinality:
            role["members"] = cardinality[str(role.get("id"))]
    missing_class = False
    for role in roles:
        storage = role.get("storage")
        if not isinstance(storage, dict):
            continue
        if storage.get("storageClassName") is not None:  # named: it must exist (observer.GetStorageClass)
            if storage["storageClassName"] not in classes:
                errors.append(INVALID_ROLE_STORAGE_CLASS % (storage["storageClassName"], role.get("id")))
            continue
        if storage_class is None:
            missing_class = True
        else:
            storage["storageClassName"] = storage_class
    if missing_class:
        errors.append(NO_DEFAULT_STORAGE_CLASS)
    if out.get("serviceType") is None:
        out["serviceType"] = names.DEFAULT_SERVICE_TYPE
    if out.get("namingScheme") is None:
        out["namingScheme"] = names.DEFAULT_NAMING_SCHEME
    default_secret = out.get("defaultSecret")
    if default_secret is not None:
        for role in roles:
            if role.get("secret") is None:
                role["secret"] = copy.deepcopy(default_secret)
    if errors:
        return copy.deepcopy(dict(spec)), errors
    return out, errors
