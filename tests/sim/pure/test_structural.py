"""The API server's structural-schema admission of custom resources: pruning unknown fields and defaulting."""

from __future__ import annotations

import copy
from typing import Any

from kubeplumb.structural import default, prune, unknown_fields

SMALL: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "nested": {"type": "object", "default": {}, "properties": {"n": {"type": "integer", "default": 3}}},
                "opt": {"type": "string", "nullable": True, "default": "x"},
                "pod": {"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    },
}


def test_prune_removes_unknown_fields_but_not_preserved_or_meta() -> None:
    obj = {
        "apiVersion": "x/v1",
        "kind": "K",
        "metadata": {"name": "n", "labels": {"a": "b"}, "bogus": 1},
        "spec": {
            "mode": "a",
            "extra": 1,
            "free": {"keep": 1},
            "tags": ["x"],
            "pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "whatever": 2},
        },
        "status": {"x": 1},
    }
    before = copy.deepcopy(obj)
    assert unknown_fields(SMALL, obj) == ["metadata.bogus", "spec.extra", "status"]
    assert obj == before  # unknown_fields never mutates
    assert prune(SMALL, obj) == ["metadata.bogus", "spec.extra", "status"]
    assert "extra" not in obj["spec"] and "status" not in obj and "bogus" not in obj["metadata"]
    assert obj["spec"]["free"] == {"keep": 1} and obj["spec"]["pod"]["whatever"] == 2
    assert obj["metadata"]["labels"] == {"a": "b"}


def test_default_applies_nested_and_is_idempotent() -> None:
    obj: dict[str, Any] = {"spec": {"opt": None}}
    default(SMALL, obj)
    assert obj == {"spec": {"mode": "a", "nested": {"n": 3}, "opt": None}}
    again = copy.deepcopy(obj)
    default(SMALL, again)
    assert again == obj
    obj2: dict[str, Any] = {"spec": {"mode": None}}
    default(SMALL, obj2)
    assert obj2["spec"]["mode"] == "a"  # null in a non-nullable field is defaulted
