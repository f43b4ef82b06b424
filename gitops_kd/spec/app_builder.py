"""Read one KubeDirectorApp document into a KDApp, recording every semantic problem."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gitops_kd.constants import UPGRADE_ANNOTATION
from gitops_kd.spec.errors import join_path
from gitops_kd.spec.freeze import FrozenMap, freeze
from gitops_kd.spec.metadata import read_metadata
from gitops_kd.spec.model import ConfigPackage, KDApp, Role, Service
from gitops_kd.spec.persist import base_dirs, effective_persist_dirs
from gitops_kd.spec.reader import Reader
from gitops_kd.spec.upgrade_parse import parse_stanza
from gitops_kd.spec.version import parse_app_version

_CARDINALITY = re.compile(r"^(0|[1-9][0-9]*)(\+?)$")
_NOT_SET = object()


def build_app(reader: Reader, doc: Mapping[str, Any]) -> KDApp | None:
    """Build the KDApp, or None if any problem was recorded in ``reader``."""
    before = len(reader.errors)
    meta = read_metadata(reader, doc, "subdomain")
    if meta is not None and UPGRADE_ANNOTATION in meta.annotations:
        reader.error(
            join_path("metadata.annotations", UPGRADE_ANNOTATION),
            "reserved for gitops-kd (it copies spec.upgrade there); write the stanza under spec.upgrade",
        )
    spec = reader.get_map(doc, "spec", "", required=True) or {}
    label = reader.get_map(spec, "label", "spec", required=True)
    label_name = reader.get_str(label, "name", "spec.label", required=True)
    distro_id = reader.get_str(spec, "distroID", "spec", required=True)
    reader.get_int(spec, "configSchemaVersion", "spec", required=True)
    version = reader.get_str(spec, "version", "spec", required=True)
    semver_version = None
    if version:
        try:
            semver_version = parse_app_version(version)
        except ValueError as exc:
            reader.error("spec.version", str(exc))
    default_image = reader.get_str(spec, "defaultImageRepoTag", "spec")
    default_package = _package(reader, spec, "defaultConfigPackage", "spec")
    default_dirs = _dirs(reader, spec, "defaultPersistDirs", "spec")

    services = _services(reader, spec)
    service_ids = [s.id for s in services]
    config = reader.get_map(spec, "config", "spec", required=True)
    role_docs = reader.get_maps(spec, "roles", "spec", required=True)
    if spec.get("roles") == []:
        reader.error("spec.roles", "must list at least one role")
    role_ids = [r.get("id") for _, r in role_docs]
    role_services = _role_services(reader, config, role_ids, service_ids)
    selected = _selected_roles(reader, config, role_ids)
    roles = _roles(reader, role_docs, default_image, default_package, default_dirs, role_services, selected)

    upgrade = None
    if "upgrade" in spec:
        persisted = sorted({d for r in roles for d in r.effective_persist_dirs})
        upgrade = parse_stanza(spec["upgrade"], reader, "spec.upgrade", [r.id for r in roles], persisted)

    if len(reader.errors) > before or meta is None or semver_version is None:
        return None
    assert version is not None and distro_id is not None and label_name is not None
    return KDApp(
        name=meta.name,
        namespace=meta.namespace,
        version=version,
        semver=semver_version,
        distro_id=distro_id,
        label_name=label_name,
        default_image=default_image,
        roles=tuple(roles),
        services=tuple(services),
        default_persist_dirs=default_dirs,
        upgrade=upgrade,
        source=reader.file,
        frozen_body=freeze(doc),
        document=reader.document,
    )


def _package(reader: Reader, parent: Mapping[str, Any], key: str, path: str) -> Any:
    """ConfigPackage, None for an explicit null, or _NOT_SET when the key is absent."""
    if key not in parent:
        return _NOT_SET
    raw = reader.get_map(parent, key, path)
    if raw is None:
        return None
    url = reader.get_str(raw, "packageURL", join_path(path, key), required=True)
    new_layout = reader.get_bool(raw, "useNewSetupLayout", join_path(path, key))
    return ConfigPackage(url or "", bool(new_layout))


def _dirs(reader: Reader, parent: Mapping[str, Any], key: str, path: str) -> tuple[str, ...] | None:
    dirs = reader.get_str_list(parent, key, path)
    for i, d in enumerate(dirs or ()):
        if not d.startswith("/") or d.endswith("/"):
            reader.error(join_path(join_path(path, key), i), f'"{d}" must be an absolute path without a trailing "/"')
    return dirs


def _services(reader: Reader, spec: Mapping[str, Any]) -> list[Service]:
    result: list[Service] = []
    seen: dict[str, str] = {}
    for path, raw in reader.get_maps(spec, "services", "spec"):
        sid = reader.get_str(raw, "id", path, required=True)
        endpoint = reader.get_map(raw, "endpoint", path) or {}
        ep_path = join_path(path, "endpoint")
        port = reader.get_int(endpoint, "port", ep_path)
        scheme = reader.get_str(endpoint, "urlScheme", ep_path)
        dashboard = bool(reader.get_bool(endpoint, "isDashboard", ep_path))
        if dashboard and not scheme:
            reader.error(join_path(ep_path, "urlScheme"), f'required because isDashboard is true (service "{sid}")')
        label = reader.get_map(raw, "label", path) or {}
        if not sid:
            continue
        if sid in seen:
            reader.error(join_path(path, "id"), f'duplicate service id "{sid}" (also at {seen[sid]})')
            continue
        seen[sid] = path
        result.append(Service(sid, port, scheme, dashboard, reader.get_str(endpoint, "path", ep_path), label.get("name")))
    return result


def _role_services(
    reader: Reader, config: Mapping[str, Any] | None, role_ids: list[Any], service_ids: list[str]
) -> dict[str, tuple[str, ...]]:
    result: dict[str, tuple[str, ...]] = {}
    seen: dict[str, str] = {}
    for path, raw in reader.get_maps(config, "roleServices", "spec.config"):
        role_id = reader.get_str(raw, "roleID", path, required=True)
        sids = reader.get_str_list(raw, "serviceIDs", path, required=True) or ()
        for i, sid in enumerate(sids):
            if sid not in service_ids:
                reader.error(
                    join_path(join_path(path, "serviceIDs"), i),
                    f'unknown service id "{sid}" (services: {", ".join(service_ids) or "none"})',
                )
        if not role_id:
            continue
        if role_id not in role_ids:
            reader.error(join_path(path, "roleID"), f'unknown role "{role_id}" (roles: {_ids(role_ids)})')
        if role_id in seen:
            reader.error(join_path(path, "roleID"), f'role "{role_id}" listed twice (also at {seen[role_id]})')
        seen[role_id] = path
        result[role_id] = tuple(sids)
    return result


def _selected_roles(reader: Reader, config: Mapping[str, Any] | None, role_ids: list[Any]) -> set[str]:
    names = reader.get_str_list(config, "selectedRoles", "spec.config") or ()
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        path = join_path("spec.config.selectedRoles", i)
        if name not in role_ids:
            reader.error(path, f'unknown role "{name}" (roles: {_ids(role_ids)})')
        if name in seen:
            reader.error(path, f'role "{name}" listed twice (also at spec.config.selectedRoles[{seen[name]}])')
        seen.setdefault(name, i)
    return set(names)


def _roles(
    reader: Reader,
    role_docs: list[tuple[str, Mapping[str, Any]]],
    default_image: str | None,
    default_package: Any,
    default_dirs: tuple[str, ...] | None,
    role_services: dict[str, tuple[str, ...]],
    selected: set[str],
) -> list[Role]:
    result: list[Role] = []
    seen: dict[str, str] = {}
    for path, raw in role_docs:
        rid = reader.get_str(raw, "id", path, required=True)
        card = reader.get_str(raw, "cardinality", path, required=True)
        image = reader.get_str(raw, "imageRepoTag", path) or default_image
        dirs = _dirs(reader, raw, "persistDirs", path)
        package = _package(reader, raw, "configPackage", path)
        min_res = reader.get_map(raw, "minResources", path) or {}
        if not rid:
            continue
        if rid in seen:
            reader.error(join_path(path, "id"), f'duplicate role id "{rid}" (also at {seen[rid]})')
            continue
        seen[rid] = join_path(path, "id")
        if image is None:
            reader.error(path, f'role "{rid}" has no imageRepoTag and the app has no defaultImageRepoTag')
        m = _CARDINALITY.match(card or "")
        if card and m is None:
            reader.error(join_path(path, "cardinality"), f'"{card}" is not a cardinality: expected "N" or "N+", e.g. "1" or "3+"')
        if m is None:
            continue
        if package is _NOT_SET:
            package = default_package if default_package is not _NOT_SET else None
        app_dirs = dirs if dirs is not None else default_dirs
        base = base_dirs(package is not None, bool(package and package.use_new_setup_layout))
        result.append(
            Role(
                id=rid,
                cardinality=card or "",
                min_members=int(m.group(1)),
                max_members=None if m.group(2) else int(m.group(1)),
                image=image,
                persist_dirs=dirs,
                effective_persist_dirs=effective_persist_dirs(base, app_dirs),
                service_ids=role_services.get(rid, ()),
                min_resources=FrozenMap(freeze(min_res)),
                config_package=package,
                selected=rid in selected,
            )
        )
    return result


def _ids(ids: list[Any]) -> str:
    return ", ".join(str(i) for i in ids if isinstance(i, str)) or "none"
