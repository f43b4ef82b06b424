"""Read one KubeDirectorCluster document into a KDCluster, recording every semantic problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.constants import WAVE_LABEL
from gitops_kd.spec.errors import join_path
from gitops_kd.spec.freeze import FrozenMap, freeze
from gitops_kd.spec.metadata import read_metadata
from gitops_kd.spec.model import ClusterRole, KDCluster
from gitops_kd.spec.reader import Reader

APP_CATALOGS = ("local", "system")


def build_cluster(reader: Reader, doc: Mapping[str, Any]) -> KDCluster | None:
    """Build the KDCluster, or None if any problem was recorded in ``reader``."""
    before = len(reader.errors)
    meta = read_metadata(reader, doc, "label")
    wave = 0
    if meta is not None and WAVE_LABEL in meta.labels:
        text = meta.labels[WAVE_LABEL]
        if text.isdigit() and text.isascii():
            wave = int(text)
        else:
            reader.error(
                join_path("metadata.labels", WAVE_LABEL),
                f'"{text}" is not a wave: expected a non-negative integer such as "0" or "2"',
            )
    spec = reader.get_map(doc, "spec", "", required=True) or {}
    app = reader.get_str(spec, "app", "spec", required=True)
    catalog = reader.get_str(spec, "appCatalog", "spec")
    if catalog is not None and catalog not in APP_CATALOGS:
        reader.error("spec.appCatalog", f'must be "local" or "system", not "{catalog}"')
    roles = _roles(reader, spec)
    if len(reader.errors) > before or meta is None or not app:
        return None
    return KDCluster(
        name=meta.name,
        namespace=meta.namespace,
        app=app,
        app_catalog=catalog,
        roles=tuple(roles),
        wave=wave,
        source=reader.file,
        frozen_body=freeze(doc),
        document=reader.document,
    )


def _roles(reader: Reader, spec: Mapping[str, Any]) -> list[ClusterRole]:
    result: list[ClusterRole] = []
    seen: dict[str, str] = {}
    docs = reader.get_maps(spec, "roles", "spec", required=True)
    if "roles" in spec and isinstance(spec["roles"], list) and not spec["roles"]:
        reader.error("spec.roles", "must list at least one role")
    for path, raw in docs:
        rid = reader.get_str(raw, "id", path, required=True)
        members = reader.get_int(raw, "members", path)
        if members is not None and members < 0:
            reader.error(join_path(path, "members"), f"must be a non-negative integer, not {members}")
        storage = reader.get_map(raw, "storage", path) or {}
        size = reader.get_str(storage, "size", join_path(path, "storage"))
        storage_class = reader.get_str(storage, "storageClassName", join_path(path, "storage"))
        resources = reader.get_map(raw, "resources", path) or {}
        if not rid:
            continue
        if rid in seen:
            reader.error(join_path(path, "id"), f'duplicate role id "{rid}" (also at {seen[rid]})')
            continue
        seen[rid] = join_path(path, "id")
        result.append(ClusterRole(rid, members, size, storage_class, FrozenMap(freeze(resources))))
    return result
