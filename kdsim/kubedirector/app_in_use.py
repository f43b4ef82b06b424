"""KubeDirector's app-in-use admission rule (pkg/validator/app.go admitAppCR), pure: which KDClusters reference a
KDApp, whether an update changes the app spec as KD's Go types see it, and KD's denial message.

KD refuses a DELETE of a referenced KDApp, and an UPDATE whose spec (decoded into KubeDirectorAppSpec, with the
webhook's role defaults folded in, defaultConfigPackage ignored) is not semantically equal to the old one.
A cluster references the app from when KD first sees it until KD handles its deletion (drops its finalizer);
its key is its own namespace for appCatalog "local", KD's namespace for "system" (pkg/shared/apptypes.go).
KD "first sees" a cluster in its controller's first pass (handleNewCluster, just before it writes
status.generationUID), not at admission; here a cluster counts from when it is stored, which closes the short
window in which the real KD still admits an edit of the app a just-created cluster uses.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

from kdsim.kubedirector import names
from kdsim.validation.pvc import parse_quantity

APP_IN_USE = (
    "KubeDirectorApp resource cannot be deleted or modified while referenced by the following KubeDirectorCluster resources: %s"
)

_MISSING = object()  # a key absent from the JSON (only SetupPackage tells it apart from null)
_UNSET, _NULL = ("unset",), ("null",)  # SetupPackage IsSet=false / IsSet and IsNull
Conv = Callable[[Any], Any]


# -- which clusters reference the app --------------------------------------------------------------
def referencing_clusters(
    app_namespace: str,
    app_name: str,
    clusters: Iterable[Mapping[str, Any]],
    *,
    system_namespace: str,
    app_exists: Callable[[str, str], bool],
) -> list[str]:
    """ "namespace/name" of every KDCluster using the app, in the order KD would have noticed them.

    `app_exists(namespace, name)` says whether a KDApp exists there: a cluster without spec.appCatalog gets
    "local" when its namespace has the app, else "system" (what KD's cluster webhook would have written)."""
    found: list[tuple[str, str, str]] = []
    for cluster in clusters:
        meta, spec = cluster.get("metadata") or {}, cluster.get("spec") or {}
        if spec.get("app") != app_name or _released(meta):
            continue
        namespace = str(meta.get("namespace", ""))
        catalog = spec.get("appCatalog") or (names.CATALOG_LOCAL if app_exists(namespace, app_name) else names.CATALOG_SYSTEM)
        key_namespace = namespace if catalog == names.CATALOG_LOCAL else system_namespace
        if key_namespace == app_namespace:
            found.append((str(meta.get("creationTimestamp", "")), namespace, str(meta.get("name", ""))))
    return [f"{ns}/{name}" for _, ns, name in sorted(found)]


def _released(meta: Mapping[str, Any]) -> bool:
    """KD drops a cluster's app reference when it removes its finalizer from a cluster being deleted."""
    return bool(meta.get("deletionTimestamp")) and names.FINALIZER not in (meta.get("finalizers") or [])


def denial(references: list[str]) -> str:
    """The message KD's webhook answers with (AdmissionResponse.Result.Message, with KD's leading newline)."""
    return "\n" + APP_IN_USE % ", ".join(references)


# -- does an update change the spec, as KD compares it ---------------------------------------------
def spec_changed(old_spec: Mapping[str, Any] | None, new_spec: Mapping[str, Any] | None) -> bool:
    """KD's `!equality.Semantic.DeepEqual(appCR.Spec, prevAppCR.Spec)` on the decoded, defaulted specs.

    The stored old object carries the webhook's patches (defaults folded into the roles and removed); the new
    one is the request with the defaults folded in memory (defaultMaxLogSizeDump stays, as in KD)."""
    old = _fold(_APP_SPEC(old_spec if old_spec is not None else _MISSING), request=False)
    new = _fold(_APP_SPEC(new_spec if new_spec is not None else _MISSING), request=True)
    old["defaultConfigPackage"] = new["defaultConfigPackage"]
    return old != new


def _fold(spec: dict[str, Any], *, request: bool) -> dict[str, Any]:
    """validateRoles: move the app-level defaults into each role and clear them."""
    s = copy.deepcopy(spec)
    image, setup = s["defaultImageRepoTag"], s["defaultConfigPackage"]
    persist, events = s["defaultPersistDirs"], s["defaultEventList"]
    max_log = s["defaultMaxLogSizeDump"] if s["defaultMaxLogSizeDump"] is not None else names.DEFAULT_MAX_LOG_SIZE_DUMP
    s["defaultImageRepoTag"] = s["defaultPersistDirs"] = s["defaultEventList"] = None
    s["defaultConfigPackage"] = _UNSET
    if not request:
        s["defaultMaxLogSizeDump"] = None  # removed by the webhook's patch before the object was stored
    for role in s["roles"]:
        if role["configPackage"] == _UNSET:
            role["configPackage"] = _NULL if setup in (_UNSET, _NULL) else setup
        if role["imageRepoTag"] is None:
            if image is None:
                continue  # KD records a validation error and skips the rest of this role
            role["imageRepoTag"] = image
        if role["persistDirs"] is None and persist is not None:
            role["persistDirs"] = list(persist)
        if role["eventList"] is None and events is not None:
            role["eventList"] = list(events)
        if role["maxLogSizeDump"] is None:
            role["maxLogSizeDump"] = max_log
    return s


# -- decoding JSON into KD's Go types (zero values, nil == empty slices/maps, pointers) --------------
def _absent(v: Any) -> bool:
    return v is None or v is _MISSING


def _value(zero: Any) -> Conv:
    return lambda v: zero if _absent(v) else v


def _ptr(inner: Conv = lambda v: v) -> Conv:
    return lambda v: None if _absent(v) else inner(v)


def _slice(inner: Conv) -> Conv:
    return lambda v: [] if _absent(v) or not isinstance(v, list) else [inner(x) for x in v]


def _struct(fields: dict[str, Conv]) -> Conv:
    def conv(v: Any) -> dict[str, Any]:
        src = v if isinstance(v, Mapping) else {}
        return {k: c(src.get(k, _MISSING)) for k, c in fields.items()}

    return conv


def _setup_package(v: Any) -> Any:
    if v is _MISSING:
        return _UNSET
    if v is None:
        return _NULL
    return ("info", _STR(v.get("packageURL")), _BOOL(v.get("useNewSetupLayout")))


def _quantity(q: Any) -> Decimal | str:
    """resource.Quantity compares by value under Semantic equality ("1Gi" == "1024Mi")."""
    try:
        return parse_quantity(q)
    except ValueError:
        return str(q)


_STR, _INT, _BOOL = _value(""), _value(0), _value(False)
_STRINGS = _slice(_STR)
_LABEL = _struct({"name": _STR, "description": _STR})
_NODE_ROLE = _struct(
    {
        "id": _STR,
        "cardinality": _STR,
        "imageRepoTag": _ptr(),
        "configPackage": _setup_package,
        "persistDirs": _ptr(_STRINGS),
        "eventList": _ptr(_STRINGS),
        "minResources": _ptr(lambda m: {k: _quantity(q) for k, q in (m or {}).items()}),
        "minStorage": _ptr(_struct({"size": _STR, "ephemeralModeSupported": _BOOL})),
        "containerSpec": _ptr(_struct({"stdin": _BOOL, "tty": _BOOL})),
        "maxLogSizeDump": _ptr(),
    }
)
_SERVICE = _struct(
    {
        "id": _STR,
        "label": _LABEL,
        "exported_service": _STR,
        "endpoint": _struct({"urlScheme": _STR, "port": _ptr(), "path": _STR, "isDashboard": _BOOL, "hasAuthToken": _BOOL}),
    }
)
_CONFIG = _struct(
    {
        "roleServices": _slice(_struct({"serviceIDs": _STRINGS, "roleID": _STR})),
        "selectedRoles": _STRINGS,
        "configMeta": lambda v: {} if _absent(v) else dict(v),
    }
)
_APP_SPEC = _struct(
    {
        "label": _LABEL,
        "distroID": _STR,
        "version": _STR,
        "configSchemaVersion": _INT,
        "defaultImageRepoTag": _ptr(),
        "defaultConfigPackage": _setup_package,
        "services": _slice(_SERVICE),
        "roles": _slice(_NODE_ROLE),
        "config": _CONFIG,
        "defaultPersistDirs": _ptr(_STRINGS),
        "defaultEventList": _ptr(_STRINGS),
        "capabilities": _STRINGS,
        "systemdRequired": _BOOL,
        "logoURL": _STR,
        "defaultMaxLogSizeDump": _ptr(),
    }
)
