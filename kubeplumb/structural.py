"""Structural openAPIV3Schema handling for CRDs: validate, find/prune unknown fields, apply defaults."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kubeplumb import fielderrors as fe

_OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_TYPE_META = ("apiVersion", "kind", "metadata")
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


@dataclass(frozen=True)
class Violation:
    """One schema violation: `path` like "spec.roles[0].id", `reason` a metav1 cause type."""

    path: str
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def _v(err: fe.FieldError) -> Violation:
    return Violation(err.path, err.reason, err.message)


def json_type(value: object) -> str:
    """The OpenAPI type name of a decoded JSON value ("null" for None)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _type_ok(expected: str, value: object) -> bool:
    actual = json_type(value)
    if expected == "number":
        return actual in ("integer", "number")
    if expected == "integer":
        return actual == "integer" or (actual == "number" and float(value).is_integer())  # type: ignore[arg-type]
    return actual == expected


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def validate(schema: dict[str, Any], obj: object) -> list[Violation]:
    """Every violation of `obj` against the structural schema, worded like kube-apiserver."""
    out: list[Violation] = []
    _validate(schema, obj, "", out, root=True)
    return out


def _validate(schema: dict[str, Any], value: object, path: str, out: list[Violation], root: bool = False) -> None:
    name = path
    if value is None:
        if schema.get("nullable"):
            return
        if "type" in schema or schema.get("x-kubernetes-int-or-string"):
            expected = schema.get("type") or "integer,string"
            out.append(_v(fe.type_invalid(path, "null", f'{name} in body must be of type {expected}: "null"')))
            return
    expected = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        if json_type(value) not in ("integer", "string", "null"):
            actual = json_type(value)
            out.append(_v(fe.type_invalid(path, actual, f'{name} in body must be of type integer,string: "{actual}"')))
            return
    elif expected and not _type_ok(expected, value):
        actual = json_type(value)
        out.append(_v(fe.type_invalid(path, actual, f'{name} in body must be of type {expected}: "{actual}"')))
        return
    _value_checks(schema, value, path, out)
    for key in ("allOf", "anyOf", "oneOf", "not"):
        if key in schema:
            _combinators(schema, key, value, path, out)
    if isinstance(value, dict):
        _validate_object(schema, value, path, out, root)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _validate(items, item, fe.index(path, i), out)


def _validate_object(schema: dict[str, Any], value: dict[str, Any], path: str, out: list[Violation], root: bool) -> None:
    props: dict[str, Any] = schema.get("properties") or {}
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    for req in schema.get("required") or []:
        if req not in value:
            out.append(_v(fe.required(fe.child(path, req))))
    if embedded:
        for req in ("apiVersion", "kind"):
            if not value.get(req):
                out.append(_v(fe.required(fe.child(path, req), "must not be empty")))
    for key in sorted(value):
        child_path = fe.child(path, key)
        if (root or embedded) and key == "metadata":
            meta_schema = props.get("metadata") or {}
            if isinstance(value[key], dict):
                for meta_key in ("name", "generateName"):
                    sub = (meta_schema.get("properties") or {}).get(meta_key)
                    if sub is not None and meta_key in value[key]:
                        _validate(sub, value[key][meta_key], fe.child(child_path, meta_key), out)
            elif value[key] is not None:
                actual = json_type(value[key])
                out.append(_v(fe.type_invalid(child_path, actual, f'{child_path} in body must be of type object: "{actual}"')))
            continue
        if key in props:
            _validate(props[key], value[key], child_path, out)
            continue
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            _validate(extra, value[key], child_path, out)
        elif extra is False and not schema.get("x-kubernetes-preserve-unknown-fields") and props:
            out.append(_v(fe.invalid(path, key, f"{path}.{key} in body is a forbidden property")))


def _value_checks(schema: dict[str, Any], value: object, path: str, out: list[Violation]) -> None:
    name = path
    if "enum" in schema and value not in schema["enum"]:
        allowed = [v if isinstance(v, str) else _json_text(v) for v in schema["enum"]]
        out.append(_v(fe.not_supported(path, value, allowed)))
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > int(schema["maxLength"]):
            out.append(_v(fe.too_long(path, int(schema["maxLength"]))))
        if "minLength" in schema and len(value) < int(schema["minLength"]):
            out.append(_v(fe.invalid(path, value, f"{name} in body should be at least {schema['minLength']} chars long")))
        if "pattern" in schema and not _regex(schema["pattern"]).search(value):
            out.append(_v(fe.invalid(path, value, f"{name} in body should match '{schema['pattern']}'")))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _number_checks(schema, value, path, out)
    elif isinstance(value, list):
        if "maxItems" in schema and len(value) > int(schema["maxItems"]):
            out.append(_v(fe.too_many(path, len(value), int(schema["maxItems"]))))
        if "minItems" in schema and len(value) < int(schema["minItems"]):
            out.append(_v(fe.invalid(path, len(value), f"{name} in body should have at least {schema['minItems']} items")))
        if schema.get("uniqueItems") and len({_json_text(v) for v in value}) != len(value):
            out.append(_v(fe.invalid(path, value, f"{name} in body shouldn't contain duplicates")))
    elif isinstance(value, dict):
        if "maxProperties" in schema and len(value) > int(schema["maxProperties"]):
            out.append(_v(fe.too_many(path, len(value), int(schema["maxProperties"]))))
        if "minProperties" in schema and len(value) < int(schema["minProperties"]):
            out.append(
                _v(fe.invalid(path, len(value), f"{name} in body should have at least {schema['minProperties']} properties"))
            )


def _number_checks(schema: dict[str, Any], value: int | float, path: str, out: list[Violation]) -> None:
    name = path
    if "minimum" in schema:
        low = schema["minimum"]
        exclusive = bool(schema.get("exclusiveMinimum"))
        if value < low or (exclusive and value == low):
            word = "greater than" if exclusive else "greater than or equal to"
            out.append(_v(fe.invalid(path, value, f"{name} in body should be {word} {fe.go_number(low)}")))
    if "maximum" in schema:
        high = schema["maximum"]
        exclusive = bool(schema.get("exclusiveMaximum"))
        if value > high or (exclusive and value == high):
            word = "less than" if exclusive else "less than or equal to"
            out.append(_v(fe.invalid(path, value, f"{name} in body should be {word} {fe.go_number(high)}")))
    if "multipleOf" in schema:
        factor = schema["multipleOf"]
        if factor and (value / factor) != int(value / factor):
            out.append(_v(fe.invalid(path, value, f"{name} in body should be a multiple of {fe.go_number(factor)}")))
    fmt = schema.get("format")
    if fmt in _INT_RANGES and schema.get("type") == "integer":
        low, high = _INT_RANGES[fmt]
        if not low <= value <= high:
            out.append(_v(fe.invalid(path, value, f'{name} in body must be of type {fmt}: "{fe.go_number(value)}"')))


def _combinators(schema: dict[str, Any], key: str, value: object, path: str, out: list[Violation]) -> None:
    subs = schema[key] if key != "not" else [schema[key]]
    results = []
    for sub in subs:
        errs: list[Violation] = []
        _validate(sub, value, path, errs)
        results.append(errs)
    passing = sum(1 for r in results if not r)
    label = path or "."
    if key == "allOf":
        for r in results:
            out.extend(r)
    elif key == "anyOf" and passing == 0:
        out.append(_v(fe.invalid(path, "", f"{label} in body must validate at least one schema (anyOf)")))
        out.extend(results[0] if results else [])
    elif key == "oneOf" and passing != 1:
        out.append(_v(fe.invalid(path, "", f"{label} in body must validate one and only one schema (oneOf)")))
        if passing == 0 and results:
            out.extend(results[0])
    elif key == "not" and passing == 1:
        out.append(_v(fe.invalid(path, "", f"{label} in body must not validate the schema (not)")))


def _json_text(value: object) -> str:
    import json

    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def unknown_fields(schema: dict[str, Any], obj: object) -> list[str]:
    """Paths of fields a structural schema would prune (what strict field validation reports)."""
    out: list[str] = []
    _walk_unknown(schema, obj, "", out, root=True, remove=False)
    return out


def prune(schema: dict[str, Any], obj: object) -> list[str]:
    """Remove unknown fields from `obj` in place and return their paths."""
    out: list[str] = []
    _walk_unknown(schema, obj, "", out, root=True, remove=True)
    return out


def _walk_unknown(schema: dict[str, Any], value: object, path: str, out: list[str], *, root: bool, remove: bool) -> None:
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _walk_unknown(items, item, fe.index(path, i), out, root=False, remove=remove)
        return
    if not isinstance(value, dict):
        return
    props: dict[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = root or bool(schema.get("x-kubernetes-embedded-resource"))
    for key in list(value):
        child_path = fe.child(path, key)
        if embedded and key in _TYPE_META:
            if key == "metadata" and isinstance(value[key], dict):
                for meta_key in list(value[key]):
                    if meta_key not in _OBJECT_META_FIELDS:
                        out.append(fe.child(child_path, meta_key))
                        if remove:
                            del value[key][meta_key]
            continue
        if key in props:
            _walk_unknown(props[key], value[key], child_path, out, root=False, remove=remove)
        elif isinstance(extra, dict):
            _walk_unknown(extra, value[key], child_path, out, root=False, remove=remove)
        elif extra is True or preserve:
            continue
        else:
            out.append(child_path)
            if remove:
                del value[key]


def default(schema: dict[str, Any], obj: object) -> None:
    """Apply `default:` values of the structural schema to `obj` in place (missing or non-nullable null)."""
    if isinstance(obj, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        for key, sub in props.items():
            if "default" not in sub:
                continue
            if key not in obj or (obj[key] is None and not sub.get("nullable")):
                obj[key] = copy.deepcopy(sub["default"])
        for key, sub in props.items():
            if key in obj:
                default(sub, obj[key])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in obj:
                if key not in props:
                    default(extra, obj[key])
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in obj:
                default(items, item)
