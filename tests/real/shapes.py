"""Compare two answers to the same request by shape: status code, Status reason/message, and the field paths."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def paths(value: Any, prefix: str = "") -> Iterator[str]:
    """Every field path of a JSON value; list items share `[]`."""
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{prefix}.{key}" if prefix else key
            yield here
            yield from paths(item, here)
    elif isinstance(value, list):
        for item in value:
            yield from paths(item, f"{prefix}[]")


def differences(real: dict[str, Any], embedded: dict[str, Any]) -> list[str]:
    """What differs between the recorded real answer and the embedded one (empty: same shape)."""
    out = []
    if real["status"] != embedded["status"]:
        out.append(f"status {real['status']} vs {embedded['status']}")
    a, b = real["body"] or {}, embedded["body"] or {}
    if a.get("kind") == "Status" or b.get("kind") == "Status":
        for key in ("reason", "message", "code"):
            if a.get(key) != b.get(key):
                out.append(f"{key} {a.get(key)!r} vs {b.get(key)!r}")
    if embedded.get("timedOut"):
        out.append("the awaited condition never came")
    only_real, only_embedded = sorted(set(paths(a)) - set(paths(b))), sorted(set(paths(b)) - set(paths(a)))
    if only_real:
        out.append("only real: " + ", ".join(only_real[:6]) + (" ..." if len(only_real) > 6 else ""))
    if only_embedded:
        out.append("only embedded: " + ", ".join(only_embedded[:6]) + (" ..." if len(only_embedded) > 6 else ""))
    return out
