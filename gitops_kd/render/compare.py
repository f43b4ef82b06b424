"""Compare a live pod template with the owned fields: the differing field paths, and the strategic merge
patch that makes the live template carry the owned fields while keeping everything else (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitops_kd.kd import layout
from gitops_kd.render.quantity import resources_equal
from gitops_kd.render.template import OWNED_ENV_PREFIX
from gitops_kd.spec.freeze import thaw

PATCH = "$patch"


@dataclass(frozen=True)
class _KeyedList:
    """A list merged by ``key``; ``owns(item)`` says which live items gitops-kd owns (extra ones are removed)."""

    field: str
    key: str

    def owns(self, item: Mapping[str, Any]) -> bool:
        if self.field == "volumeMounts":
            return item.get("name") == layout.PVC_TEMPLATE
        if self.field == "env":
            return str(item.get("name", "")).startswith(OWNED_ENV_PREFIX)
        return True


_KEYED = (_KeyedList("ports", "containerPort"), _KeyedList("volumeMounts", "mountPath"), _KeyedList("env", "name"))
_ATOMIC = ("image", "command", "args")
_CONTAINER_LISTS = ("initContainers", "containers")


def _by_key(items: Sequence[Mapping[str, Any]] | None, key: str) -> dict[Any, Mapping[str, Any]]:
    return {i.get(key): i for i in items or () if isinstance(i, Mapping)}


def _item_matches(live: Mapping[str, Any] | None, owned: Mapping[str, Any]) -> bool:
    """Every owned key equal in the live item; an empty string equals an absent key (the API omits
    empty strings, e.g. an env var with value "")."""
    if live is None:
        return False
    return all(_plain(live.get(k, "" if v == "" else None)) == _plain(v) for k, v in owned.items())


def _plain(value: Any) -> Any:
    return thaw(value)


def _keyed_diff(
    live_c: Mapping[str, Any], owned_c: Mapping[str, Any], spec: _KeyedList, where: str
) -> tuple[list[str], list[dict[str, Any]] | None]:
    """(differing paths, patch list or None) for one keyed list of a container."""
    if spec.field not in owned_c:
        return [], None
    owned_items = list(owned_c[spec.field])
    live_items = _by_key(live_c.get(spec.field), spec.key)
    paths: list[str] = []
    for item in owned_items:
        if not _item_matches(live_items.get(item[spec.key]), item):
            paths.append(f"{where}.{spec.field}[{item[spec.key]}]")
    owned_keys = {i[spec.key] for i in owned_items}
    extra = [k for k, i in live_items.items() if k not in owned_keys and spec.owns(i)]
    paths += [f"{where}.{spec.field}[{k}]" for k in extra]
    if not paths:
        return [], None
    return paths, [_plain(i) for i in owned_items] + [{spec.key: k, PATCH: "delete"} for k in extra]


def _container_diff(
    live_c: Mapping[str, Any] | None, owned_c: Mapping[str, Any], where: str
) -> tuple[list[str], dict[str, Any] | None]:
    if live_c is None:
        return [where], _plain(owned_c)
    paths: list[str] = []
    patch: dict[str, Any] = {"name": owned_c["name"]}
    for field in _ATOMIC:
        if field in owned_c and _plain(live_c.get(field)) != _plain(owned_c[field]):
            paths.append(f"{where}.{field}")
            patch[field] = _plain(owned_c[field])
    if "resources" in owned_c and not resources_equal(live_c.get("resources"), owned_c["resources"]):
        paths.append(f"{where}.resources")
        patch["resources"] = {PATCH: "replace", **_plain(owned_c["resources"])}
    for spec in _KEYED:
        sub_paths, sub_patch = _keyed_diff(live_c, owned_c, spec, where)
        paths += sub_paths
        if sub_patch is not None:
            patch[spec.field] = sub_patch
    return paths, (patch if paths else None)


def _diff(live: Mapping[str, Any], owned: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
    paths: list[str] = []
    patch: dict[str, Any] = {}
    owned_ann = (owned.get("metadata") or {}).get("annotations") or {}
    live_ann = (live.get("metadata") or {}).get("annotations") or {}
    changed = {k: v for k, v in owned_ann.items() if live_ann.get(k) != v}
    if changed:
        paths += [f"metadata.annotations[{k}]" for k in changed]
        patch["metadata"] = {"annotations": dict(changed)}
    owned_spec = owned.get("spec") or {}
    live_spec = live.get("spec") or {}
    for list_name in _CONTAINER_LISTS:
        live_containers = _by_key(live_spec.get(list_name), "name")
        for owned_c in owned_spec.get(list_name) or ():
            where = f"spec.{list_name}[{owned_c['name']}]"
            sub_paths, sub_patch = _container_diff(live_containers.get(owned_c["name"]), owned_c, where)
            paths += sub_paths
            if sub_patch is not None:
                patch.setdefault("spec", {}).setdefault(list_name, []).append(sub_patch)
    return paths, patch


def owned_differences(live_template: Mapping[str, Any], owned: Mapping[str, Any]) -> tuple[str, ...]:
    """Field paths where the live template does not carry the owned fields, e.g.
    ``spec.containers[app].image``, ``spec.containers[app].ports[8080]`` (a port to remove or change),
    ``spec.initContainers[init].env[GITOPS_KD_VERSION]``, ``metadata.annotations[gitops-kd.io/app-version]``."""
    return tuple(_diff(live_template, owned)[0])


def owned_fields_equal(live_template: Mapping[str, Any], owned: Mapping[str, Any]) -> bool:
    """True when the live template already carries every owned field (the drift check)."""
    return not _diff(live_template, owned)[0]


def template_patch(live_template: Mapping[str, Any], owned: Mapping[str, Any]) -> dict[str, Any] | None:
    """The strategic merge patch for spec.template that installs the owned fields, or None if in sync.

    Containers are merged by name, ports by containerPort, volumeMounts by mountPath, env by name (the
    apiserver's patch strategies); owned items no longer wanted get ``$patch: delete``, resources are
    replaced whole. Fields gitops-kd does not own are not mentioned, so they are preserved.
    """
    paths, patch = _diff(live_template, owned)
    return patch if paths else None
