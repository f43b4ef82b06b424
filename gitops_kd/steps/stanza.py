"""The registry of step kinds placed in the upgrade stanza (spec halves): where each sits, in build order."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from gitops_kd.steps import gate, hook


class StanzaStep(Protocol):
    """A step kind's spec half: its place in spec.upgrade (its UpgradeSpec field is the last key, snake_case), schema
    fragment and parse."""

    PATH: tuple[str, ...]
    SCHEMA: Mapping[str, Any]

    def parse(
        self, raw: Mapping[str, Any] | None, error: Callable[[str], None], roles_of: Callable[[Any], tuple[str, ...] | None]
    ) -> object:
        """The kind's model of a schema-valid fragment (None when absent); problems go to ``error``."""
        ...


STANZA_STEPS: tuple[StanzaStep, ...] = (hook, gate)


def schema_properties() -> dict[str, Any]:
    """The stanza's properties the step kinds own, each fragment nested at its PATH in closed objects."""
    out: dict[str, Any] = {}
    for kind in STANZA_STEPS:
        props = out
        for part in kind.PATH[:-1]:
            props = props.setdefault(part, {"type": "object", "additionalProperties": False, "properties": {}})
            props = props["properties"]
        props[kind.PATH[-1]] = kind.SCHEMA
    return out


def field_of(kind: StanzaStep) -> str:
    """The kind's UpgradeSpec field: the last key of its PATH in snake_case (postUpgrade -> post_upgrade)."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", kind.PATH[-1]).lower()


def fragment(raw: Mapping[str, Any], kind: StanzaStep) -> Any:
    """The kind's part of a stanza (None when absent); a malformed container raises as a missing map would."""
    value: Any = raw
    for part in kind.PATH[:-1]:
        value = value.get(part) or {}
    return value.get(kind.PATH[-1])
