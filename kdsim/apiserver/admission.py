"""Admission: defaulting, pruning and validation of objects, delegating to the pure kdsim modules."""

from __future__ import annotations

from typing import Any

from kdsim import defaults, errors, patch, selectors, validation
from kdsim.apiserver.resources import ResourceType
from kubeplumb import structural


def _cause(v: Any) -> errors.Cause:
    if isinstance(v, errors.Cause):
        return v
    path = getattr(v, "path", None) or getattr(v, "field", "") or ""
    return errors.Cause(
        reason=str(getattr(v, "reason", "FieldValueInvalid")), message=str(getattr(v, "message", v)), field=str(path)
    )


def default_object(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Fill defaults in place (built-ins via sim.defaults, custom resources via their schema) and prune CRs."""
    if rt.custom:
        if rt.schema:
            structural.prune(rt.schema, obj)
            structural.default(rt.schema, obj)
        return
    defaults.apply_defaults(rt.kind, rt.api_version, obj)


def reject_unknown_fields(rt: ResourceType, obj: dict[str, Any]) -> None:
    """fieldValidation=Strict: 400 when a custom resource carries fields its schema does not declare."""
    if not rt.custom or not rt.schema:
        return
    unknown = structural.unknown_fields(rt.schema, obj)
    if unknown:
        fields = ", ".join(f'unknown field "{p}"' for p in unknown)
        raise errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: strict decoding error: {fields}'
        )


def validate_object(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Raise 422 Invalid when `obj` (create if `old` is None, else update) is not acceptable."""
    name = str((obj.get("metadata") or {}).get("name", ""))
    if rt.custom:
        if rt.schema:
            violations = structural.validate(rt.schema, obj)
            if violations:
                raise errors.invalid(rt.kind, name, [_cause(v) for v in violations], rt.group)
        return
    validation.validate(rt.kind, rt.api_version, obj, old)


def patch_object(original: dict[str, Any], body: bytes, content_type: str, rt: ResourceType) -> dict[str, Any]:
    """Apply a JSON / merge / strategic-merge / apply patch via sim.patch (415 for unsupported types)."""
    result: dict[str, Any] = patch.apply_patch(original, body, content_type, kind=rt.kind, api_version=rt.api_version)
    return result


def label_matcher(text: str | None) -> Any:
    """A parsed labelSelector (object with .matches(labels)) or None when `text` is empty."""
    if not text:
        return None
    return selectors.parse_label_selector(text)


def field_matcher(text: str | None, kind: str) -> Any:
    """A parsed fieldSelector (object with .matches(obj)) or None when `text` is empty."""
    if not text:
        return None
    return selectors.parse_field_selector(text, kind)


def selector_from_dict(d: dict[str, Any]) -> Any:
    return selectors.label_selector_from_dict(d)
