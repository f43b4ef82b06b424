"""Field paths in drift notation (``a.b[key].c``): split them and read the value they name from a dict (pure)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

# Keys a list item can be addressed by, in order of preference (containers by name, ports by containerPort...).
ITEM_KEYS = ("name", "id", "containerPort", "mountPath", "port")
_TOKEN = re.compile(r"\.?([^.\[\]]+)|\[([^\]]*)\]")


def split(path: str) -> tuple[str, ...]:
    """``spec.containers[app].image`` -> ("spec", "containers", "app", "image"). Raises ValueError on junk."""
    out: list[str] = []
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"field path {path!r}: cannot parse at offset {pos}")
        out.append(m.group(1) if m.group(1) is not None else m.group(2))
        pos = m.end()
    return tuple(out)


def join(parts: Sequence[str]) -> str:
    """Inverse of split: names as ``.name``, anything else (and list items) as ``[key]``. A part already
    written as ``[key]`` (a list item) is kept as is."""
    text = ""
    for part in parts:
        if part.startswith("[") and part.endswith("]"):
            text += part
        elif not text:
            text = part if _plain(part) else f"[{part}]"
        else:
            text += f".{part}" if _plain(part) else f"[{part}]"
    return text


def item_key(item: Any) -> str | None:
    """The key a list item is addressed by (its name, id, containerPort, mountPath or port), or None."""
    if isinstance(item, Mapping):
        for k in ITEM_KEYS:
            if item.get(k) is not None:
                return str(item[k])
    return None


def value_at(obj: Any, path: str) -> Any:
    """The value the path names in ``obj`` (None when absent). A list step matches an item any of whose
    ITEM_KEYS fields equals it (``ports[8080]`` and ``ports[http]`` both work), else an index."""
    cur = obj
    for part in split(path):
        if isinstance(cur, Mapping):
            cur = cur.get(part)
        elif isinstance(cur, Sequence) and not isinstance(cur, (str, bytes)):
            cur = _list_item(cur, part)
        else:
            return None
        if cur is None:
            return None
    return cur


def _list_item(items: Sequence[Any], part: str) -> Any:
    for item in items:
        if isinstance(item, Mapping) and any(item.get(k) is not None and str(item[k]) == part for k in ITEM_KEYS):
            return item
    if part.isdigit() and int(part) < len(items):
        return items[int(part)]
    return None


def _plain(part: str) -> bool:
    return bool(part) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part) is not None and not part.isdigit()
