"""Admission: defaulting, pruning and validation of objects, delegating to the pure sim/schema modules."""

from __future__ import annotations

import importlib
import logging
from types import ModuleType
from typing import Any

from gitops_kd.sim import errors
from gitops_kd.sim.apiserver.resources import ResourceType

log = logging.getLogger(__name__)


def _module(name: str) -> ModuleType | None:
    """Import an optional pure module; None while it does not exist yet."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            log.debug("optional module %s not present", name)
            return None
        raise


def _cause(v: Any) -> errors.Cause:
    if isinstance(v, errors.Cause):
        return v
    path = getattr(v, "path", None) or getattr(v, "field", "") or ""
    return errors.Cause(reason=str(getattr(v, "reason", "FieldValueInvalid")),
                        message=str(getattr(v, "message", v)), field=str(path))


def default_object(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Fill defaults in place (built-ins via sim.defaults, custom resources via their schema) and prune CRs."""
    if rt.custom:
        openapi = _module("gitops_kd.schema.openapi")
        if openapi is not None and rt.schema:
            openapi.prune(rt.schema, obj)
            openapi.default(rt.schema, obj)
        return
    defaults = _module("gitops_kd.sim.defaults")
    if defaults is not None:
        defaults.apply_defaults(rt.kind, rt.api_version, obj)


def reject_unknown_fields(rt: ResourceType, obj: dict[str, Any]) -> None:
    """fieldValidation=Strict: 400 when a custom resource carries fields its schema does not declare."""
    if not rt.custom or not rt.schema:
        return
    openapi = _module("gitops_kd.schema.openapi")
    if openapi is None:
        return
    unknown = openapi.unknown_fields(rt.schema, obj)
    if unknown:
        fields = ", ".join(f'unknown field "{p}"' for p in unknown)
        raise errors.bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                                 f"strict decoding error: {fields}")


def validate_object(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Raise 422 Invalid when `obj` (create if `old` is None, else update) is not acceptable."""
    name = str((obj.get("metadata") or {}).get("name", ""))
    if rt.custom:
        openapi = _module("gitops_kd.schema.openapi")
        if openapi is not None and rt.schema:
            violations = openapi.validate(rt.schema, obj)
            if violations:
                raise errors.invalid(rt.kind, name, [_cause(v) for v in violations], rt.group)
        return
    validation = _module("gitops_kd.sim.validation")
    if validation is not None and hasattr(validation, "validate"):
        validation.validate(rt.kind, rt.api_version, obj, old)


def patch_object(original: dict[str, Any], body: bytes, content_type: str, rt: ResourceType) -> dict[str, Any]:
    """Apply a JSON / merge / strategic-merge / apply patch via sim.patch (415 for unsupported types)."""
    patch = _module("gitops_kd.sim.patch")
    if patch is None:
        raise errors.internal("patch support is not available")
    result: dict[str, Any] = patch.apply_patch(original, body, content_type, kind=rt.kind, api_version=rt.api_version)
    return result


def label_matcher(text: str | None) -> Any:
    """A parsed labelSelector (object with .matches(labels)) or None when `text` is empty."""
    if not text:
        return None
    selectors = _module("gitops_kd.sim.selectors")
    if selectors is None:
        raise errors.internal("label selectors are not available")
    return selectors.parse_label_selector(text)


def field_matcher(text: str | None, kind: str) -> Any:
    """A parsed fieldSelector (object with .matches(obj)) or None when `text` is empty."""
    if not text:
        return None
    selectors = _module("gitops_kd.sim.selectors")
    if selectors is None:
        raise errors.internal("field selectors are not available")
    return selectors.parse_field_selector(text, kind)


def selector_from_dict(d: dict[str, Any]) -> Any:
    selectors = _module("gitops_kd.sim.selectors")
    if selectors is None:
        raise errors.internal("label selectors are not available")
    return selectors.label_selector_from_dict(d)
