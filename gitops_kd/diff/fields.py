"""Per-role field changes between two KDApp specs or two KDCluster specs, read from plain dicts (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.diff.model import FieldChange
from gitops_kd.kd.normalize import without_kd_defaults
from gitops_kd.spec.freeze import thaw

_SCALARS = frozenset({str, int, float, bool, type(None)})
APP_FIELDS = ("image", "persistDirs", "cardinality", "ports")
CLUSTER_FIELDS = ("members", "resources", "env", "storage", "podLabels")


def _roles(spec: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(r.get("id")): r for r in spec.get("roles") or () if isinstance(r, Mapping)}


def app_role_facts(spec: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """role id -> {image, persistDirs, cardinality, ports} with the app-wide defaults applied (plain values;
    ``spec`` may be frozen)."""
    services = {s.get("id"): s for s in spec.get("services") or () if isinstance(s, Mapping)}
    role_services = {
        rs.get("roleID"): list(rs.get("serviceIDs") or ()) for rs in (spec.get("config") or {}).get("roleServices") or ()
    }
    out: dict[str, dict[str, Any]] = {}
    for rid, role in _roles(spec).items():
        ports = []
        for sid in services:
            endpoint = (services[sid] or {}).get("endpoint") or {}
            if sid in role_services.get(rid, []) and endpoint.get("port") is not None:
                ports.append(f"{sid}:{endpoint.get('port')}")
        dirs = role.get("persistDirs", spec.get("defaultPersistDirs"))
        out[rid] = {
            "image": role.get("imageRepoTag") or spec.get("defaultImageRepoTag"),
            "persistDirs": list(dirs) if dirs is not None else None,
            "cardinality": role.get("cardinality"),
            "ports": ports,
        }
    return out


def _changes(
    old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]], fields: tuple[str, ...], role_field: str
) -> tuple[FieldChange, ...]:
    out: list[FieldChange] = []
    for rid in sorted(set(old) | set(new)):
        if rid not in new:
            out.append(FieldChange(rid, role_field, rid, None))
        elif rid not in old:
            out.append(FieldChange(rid, role_field, None, rid))
        else:
            out += [FieldChange(rid, f, old[rid].get(f), new[rid].get(f)) for f in fields if old[rid].get(f) != new[rid].get(f)]
    return tuple(out)


def app_fact_changes(live: dict[str, dict[str, Any]], desired: dict[str, dict[str, Any]]) -> tuple[FieldChange, ...]:
    """Role-level changes of an app from the two specs' app_role_facts(): role added/removed ("role"), image,
    persistDirs, cardinality, ports."""
    return _changes(live, desired, APP_FIELDS, "role")


def cluster_role_facts(spec: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """role id -> {members, resources, env, storage, podLabels} as written."""
    return {rid: {f: thaw(r.get(f)) for f in CLUSTER_FIELDS} for rid, r in _roles(spec).items()}


def cluster_changes(live_spec: Mapping[str, Any], desired_spec: Mapping[str, Any]) -> tuple[FieldChange, ...]:
    """Role-level changes of a cluster: role added/removed ("role"), members, resources, env, storage, podLabels;
    what KubeDirector filled in where Git leaves it out (kd/normalize.py) is not a change."""
    desired = _roles(desired_spec)
    live = {
        **live_spec,
        "roles": [without_kd_defaults(r, desired[rid]) if rid in desired else r for rid, r in _roles(live_spec).items()],
    }
    return _changes(cluster_role_facts(live), cluster_role_facts(desired_spec), CLUSTER_FIELDS, "role")


def contains(live: Any, want: Any) -> bool:
    """True when ``live`` carries everything in ``want`` (maps: every wanted key, recursively; lists:
    same length, element-wise). Extra keys in ``live`` (server defaults, status) are ignored."""
    if type(want) in _SCALARS:  # the common leaf, without the Mapping ABC check
        return bool(live == want)
    if isinstance(want, Mapping):
        return isinstance(live, Mapping) and all(k in live and contains(live[k], v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return isinstance(live, (list, tuple)) and len(live) == len(want) and all(contains(a, b) for a, b in zip(live, want))
    return bool(live == want)
