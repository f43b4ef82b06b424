"""Safe readers for raw Kubernetes object dicts (missing or null fields read as empty)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def section(obj: Mapping[str, Any] | None, key: str) -> Mapping[str, Any]:
    """obj[key] as a mapping ({} when absent, null or not a mapping)."""
    value = (obj or {}).get(key)
    return value if isinstance(value, Mapping) else {}


def items(obj: Mapping[str, Any] | None, key: str) -> Sequence[Mapping[str, Any]]:
    """obj[key] as a list of mappings ([] when absent or null; non-mapping entries dropped)."""
    value = (obj or {}).get(key)
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, Mapping)]


def integer(obj: Mapping[str, Any] | None, key: str, default: int = 0) -> int:
    """obj[key] as an int (default when absent, null or not a number)."""
    value = (obj or {}).get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return default
    try:
        return int(value)
    except ValueError:
        return default


def text(obj: Mapping[str, Any] | None, key: str) -> str:
    """obj[key] as a str ("" when absent or null)."""
    value = (obj or {}).get(key)
    return "" if value is None else str(value)


def condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The condition of type `kind` in status.conditions, or None."""
    for cond in items(status, "conditions"):
        if cond.get("type") == kind:
            return cond
    return None


def being_deleted(obj: Mapping[str, Any]) -> bool:
    """True when metadata.deletionTimestamp is set."""
    return bool(section(obj, "metadata").get("deletionTimestamp"))
