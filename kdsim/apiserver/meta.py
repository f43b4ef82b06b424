"""Small object-metadata helpers: timestamps, uids, generateName, generation and status comparisons."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from typing import Any

from kubeplumb.names import SAFE_ALPHABET


def now() -> str:
    """The current time as Kubernetes writes it (RFC 3339, seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except (TypeError, ValueError):
        return None


def new_uid() -> str:
    return str(uuid.uuid4())


def generated_name(prefix: str) -> str:
    return prefix + "".join(random.choice(SAFE_ALPHABET) for _ in range(5))


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    if not isinstance(m, dict):
        m = {}
        obj["metadata"] = m
    return m


def body_of(obj: dict[str, Any], *, without_status: bool) -> dict[str, Any]:
    """Everything but metadata (and status): what a generation bump is decided on."""
    skip = {"metadata", "apiVersion", "kind"} | ({"status"} if without_status else set())
    return {k: v for k, v in obj.items() if k not in skip}


def same_ignoring_rv(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """True when two versions of an object differ at most in resourceVersion (and apiVersion/kind)."""

    def strip(o: dict[str, Any]) -> dict[str, Any]:
        c = {k: v for k, v in o.items() if k not in ("apiVersion", "kind")}
        c["metadata"] = {k: v for k, v in (o.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
        return c

    return strip(a) == strip(b)


def owner_uids(obj: dict[str, Any]) -> list[str]:
    return [str(r.get("uid")) for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if r.get("uid")]


def age(created: str | None) -> str:
    """kubectl's human duration since `created` (e.g. 5s, 3m, 2d)."""
    t = parse_time(created or "")
    if t is None:
        return "<unknown>"
    secs = int((datetime.now(UTC) - t).total_seconds())
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    mins = secs // 60
    if mins < 10:
        return f"{mins}m{secs % 60}s" if secs % 60 else f"{mins}m"
    if mins < 180:
        return f"{mins}m"
    hours = mins // 60
    if hours < 8:
        return f"{hours}h{mins % 60}m" if mins % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y{days % 365}d"
