"""OpenAPI v3 documents (kubectl explain; each PATCH operation declares fieldValidation support) and the v2 one."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kdsim.apiserver import openapi_v2, schemas
from kdsim.apiserver.discovery import GIT_VERSION
from kdsim.apiserver.registry import Registry
from kdsim.apiserver.resources import ResourceType

# Query parameters kubectl looks for on PATCH to decide the server validates fields itself (so it does not
# need the protobuf /openapi/v2 document for client-side validation).
_PATCH_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force")


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _paths_for(rt: ResourceType) -> dict[str, Any]:
    base = "/" + _gv_path(rt.group, rt.version)
    item = f"{base}/namespaces/{{namespace}}/{rt.plural}/{{name}}" if rt.namespaced else f"{base}/{rt.plural}/{{name}}"
    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    ok = {"200": {"description": "OK"}}
    patch = {
        "operationId": f"patch{rt.kind}",
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": gvk,
        "responses": ok,
        "parameters": [{"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": True}} for p in _PATCH_PARAMS],
    }
    get = {"operationId": f"read{rt.kind}", "x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk, "responses": ok}
    return {item: {"get": get, "patch": patch}}


def group_versions(registry: Registry) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    for rt in registry.all():
        if (rt.group, rt.version) not in seen:
            seen.append((rt.group, rt.version))
    return seen


def _schemas(types: list[ResourceType]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for rt in types:
        out.update(schemas.for_type(rt)[1])
    return out


def gv_document(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group-version: its paths and the schemas of its kinds."""
    types = [t for t in registry.all() if t.group == group and t.version == version]
    if not types:
        return None
    paths: dict[str, Any] = {}
    for rt in types:
        paths.update(_paths_for(rt))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": paths,
        "components": {"schemas": schemas.with_refs(_schemas(types), "#/components/schemas/", wrap=True)},
    }


def v2_document(registry: Registry) -> dict[str, Any]:
    """The Swagger 2.0 document of every served kind (definitions only)."""
    return openapi_v2.document(schemas.with_refs(_schemas(registry.all()), "#/definitions/", wrap=False), GIT_VERSION)


def _hash(registry: Registry, group: str, version: str) -> str:
    kinds = ",".join(
        sorted(
            f"{t.plural}:{t.kind}:{json.dumps(t.schema, sort_keys=True)}"
            for t in registry.all()
            if t.group == group and t.version == version
        )
    )
    return hashlib.sha256(kinds.encode()).hexdigest()[:32].upper()


def root_document(registry: Registry) -> dict[str, Any]:
    """/openapi/v3: where each group-version's document lives."""
    paths = {}
    for group, version in group_versions(registry):
        p = _gv_path(group, version)
        paths[p] = {"serverRelativeURL": f"/openapi/v3/{p}?hash={_hash(registry, group, version)}"}
    return {"paths": paths}
