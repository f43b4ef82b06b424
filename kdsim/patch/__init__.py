"""Patching objects as kube-apiserver does: JSON patch, merge patch, strategic merge patch, apply."""

from __future__ import annotations

import copy
import json
from typing import Any, cast

import yaml

from kdsim.errors import ApiError, bad_request
from kdsim.patch.jsonpatch import go_kind, json_patch
from kdsim.patch.merge import merge_patch
from kdsim.patch.schemas import schema_for
from kdsim.patch.strategic import strategic_merge
from kubeplumb.names import JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH

APPLY_PATCH = "application/apply-patch+yaml"
BUILTIN_TYPES = [JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH]
CUSTOM_TYPES = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]

BUILTIN_GROUPS = frozenset(
    {
        "",
        "apps",
        "batch",
        "autoscaling",
        "policy",
        "coordination.k8s.io",
        "events.k8s.io",
        "rbac.authorization.k8s.io",
        "networking.k8s.io",
        "storage.k8s.io",
        "apiextensions.k8s.io",
        "admissionregistration.k8s.io",
        "scheduling.k8s.io",
        "node.k8s.io",
        "discovery.k8s.io",
        "certificates.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "apiregistration.k8s.io",
        "resource.k8s.io",
    }
)


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def is_builtin(api_version: str) -> bool:
    """Whether objects of this apiVersion are served by the built-in registry (not a CRD)."""
    return _group(api_version) in BUILTIN_GROUPS


def unsupported_media(types: list[str]) -> ApiError:
    """415 exactly as negotiation.NewUnsupportedMediaTypeError words it."""
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: " + ", ".join(types),
    )


def apply_patch(original: dict[str, Any], body: bytes, content_type: str, *, kind: str, api_version: str) -> dict[str, Any]:
    """Return a new object: `original` patched by `body`; never mutates `original`."""
    media = content_type.split(";", 1)[0].strip().lower()
    builtin = is_builtin(api_version)
    allowed = BUILTIN_TYPES if builtin else CUSTOM_TYPES
    if media not in allowed:
        raise unsupported_media(allowed)
    doc = copy.deepcopy(original)
    if media == APPLY_PATCH:
        return _apply_config(doc, body, kind, builtin)
    try:
        patch = json.loads(body.decode("utf-8") if body else "null")
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        if media == MERGE_PATCH:
            raise bad_request("Invalid JSON Patch") from None
        raise bad_request(f"error decoding patch: {err}") from None
    if media == JSON_PATCH:
        return cast(dict[str, Any], json_patch(doc, patch))
    if media == MERGE_PATCH:
        if not isinstance(patch, dict):
            raise bad_request("Invalid JSON Patch")
        return cast(dict[str, Any], merge_patch(doc, patch))
    if not isinstance(patch, dict):
        raise bad_request(f"json: cannot unmarshal {go_kind(patch)} into Go value of type map[string]interface {{}}")
    return strategic_merge(doc, patch, schema_for(kind))


# --- server-side apply (simplified: no managedFields ownership) ------------------------------------------------


def _apply_config(live: dict[str, Any], body: bytes, kind: str, builtin: bool) -> dict[str, Any]:
    try:
        config = yaml.safe_load(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, yaml.YAMLError) as err:
        raise bad_request(f"error decoding YAML: {err}") from None
    if not isinstance(config, dict):
        raise bad_request("error decoding YAML: the body is not an object")
    if builtin:
        return strategic_merge(live, config, schema_for(kind))
    return cast(dict[str, Any], merge_patch(live, config))


__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_PATCH",
    "apply_patch",
    "is_builtin",
    "json_patch",
    "merge_patch",
    "strategic_merge",
    "unsupported_media",
]
