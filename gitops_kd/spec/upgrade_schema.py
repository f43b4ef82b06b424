"""JSON Schema of the upgrade stanza (additionalProperties: false everywhere) and its error wording."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import jsonschema

from gitops_kd.spec.errors import join_path
from gitops_kd.spec.reader import type_name
from gitops_kd.steps import migrate
from gitops_kd.steps.schema_parts import POSITIVE
from gitops_kd.steps.stanza import schema_properties


def _dir_action(actions: list[str]) -> dict[str, Any]:
    return {
        "if": {"type": "string"},
        "then": {"enum": actions},
        "else": {
            "type": "object",
            "additionalProperties": False,
            "required": ["migrate"],
            "properties": {"migrate": migrate.SCHEMA},
        },
    }


def _rules(actions: list[str]) -> dict[str, Any]:
    return {
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["versions"],
            "properties": {
                "versions": {"type": "string", "minLength": 1},
                "persistDirs": {"type": "object", "additionalProperties": _dir_action(actions)},
                "default": {"enum": ["keep", "discard"]},
            },
        },
    }


UPGRADE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "gitops-kd KDApp spec.upgrade",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "roleOrder": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "from": _rules(["keep", "discard", "migrate"]),
        "downgrade": {
            "type": "object",
            "additionalProperties": False,
            "required": ["to"],
            "properties": {"to": _rules(["keep", "discard", "restore"])},
        },
        **schema_properties(),
        "podReadyTimeoutSeconds": POSITIVE,
        "failurePolicy": {"enum": ["halt", "revert-commit"]},
    },
}

_VALIDATOR = jsonschema.Draft202012Validator(UPGRADE_SCHEMA)
_TYPE_WORDS = {"object": "a map", "array": "a list", "string": "a string", "integer": "an integer"}


def schema_errors(stanza: object, base: str) -> list[tuple[str, str]]:
    """Every schema problem of a stanza as (field path, reason), paths rooted at ``base``."""
    found: list[tuple[str, str]] = []
    for err in _VALIDATOR.iter_errors(stanza):
        path = base
        for part in err.absolute_path:
            path = join_path(path, part)
        found.extend(_describe(err, path))
    return sorted(set(found))


def _describe(err: jsonschema.ValidationError, path: str) -> list[tuple[str, str]]:
    kind, expected, value = err.validator, cast(Any, err.validator_value), err.instance
    if kind == "additionalProperties" and isinstance(value, Mapping):
        schema = err.schema if isinstance(err.schema, Mapping) else {}
        known = set((schema.get("properties") or {}).keys())
        return [(join_path(path, str(k)), f'unknown field "{k}"') for k in value if k not in known]
    if kind == "required" and isinstance(value, Mapping):
        return [(join_path(path, k), "required field is missing") for k in expected if k not in value]
    if kind == "type":
        return [(path, f"must be {_TYPE_WORDS.get(str(expected), str(expected))}, not {type_name(value)}")]
    if kind == "enum":
        choices = " | ".join(str(c) for c in expected)
        return [(path, f"must be one of {choices}, not {_show(value)}")]
    if kind == "minimum":
        return [(path, f"must be at least {expected}, not {_show(value)}")]
    if kind == "maximum":
        return [(path, f"must be at most {expected}, not {_show(value)}")]
    if kind == "minItems":
        return [(path, "must not be empty")]
    if kind == "minLength":
        return [(path, "must not be empty")]
    if kind == "pattern":
        return [(path, f'must match "{expected}"')]
    return [(path, err.message)]


def _show(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else f"{value!r}" if value is not None else "null"
