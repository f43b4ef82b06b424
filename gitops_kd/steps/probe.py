"""What a gate probe kind owns: its stanza key, schema fragment, parse, describe and in-pod command (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Probe(Protocol):
    """One parsed probe of a gate: described for people, run as an argv in the member's container."""

    @property
    def how(self) -> str:
        """A short name of the kind for action lines ("exec", "HTTP GET")."""
        ...

    def describe(self, pod: str) -> str:
        """The probe with its values, against ``pod`` (a pod name, or "<pod>" for a review)."""
        ...

    def command(self) -> list[str]:
        """The argv the executor runs in the member's app container; exit 0 passes."""
        ...


class ProbeKind(Protocol):
    """A probe kind's module: the key it has under spec.upgrade.gate, its schema and its parse."""

    KEY: str
    SCHEMA: Mapping[str, Any]

    def parse(self, raw: Mapping[str, Any]) -> Probe:
        """The probe of a schema-valid fragment (the schema already reported any problem)."""
        ...
