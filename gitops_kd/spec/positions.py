"""Where fields are written: field path -> (line, column) from PyYAML node marks, attached to FieldErrors."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable

import yaml

from gitops_kd.spec.errors import FieldError, join_path

Position = tuple[int, int]
"""(line, column), both 1-based."""

_TOKEN = re.compile(r"\[[^\]]*\]|\.?[^.\[]+")
_NULL_TAG = "tag:yaml.org,2002:null"


def _mark(node: yaml.Node) -> Position:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _walk(root: yaml.Node) -> dict[str, Position]:
    """Every field path of one document (as join_path writes them) -> where its key or item starts."""
    out: dict[str, Position] = {"": _mark(root)}
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:  # an alias: its fields are where the anchor wrote them
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    child = join_path(path, str(key.value))
                    out.setdefault(child, _mark(key))
                    stack.append((value, child))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                child = join_path(path, i)
                out.setdefault(child, _mark(item))
                stack.append((item, child))
    return out


def _empty(node: yaml.Node | None) -> bool:
    return node is None or (isinstance(node, yaml.ScalarNode) and node.tag == _NULL_TAG)


def field_positions(data: bytes) -> list[dict[str, Position]]:
    """Per non-empty document of a YAML (or JSON) file, each field's position; [] when it does not parse."""
    try:
        text = data.decode("utf-8-sig")
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return []
    return [_walk(n) for n in nodes if n is not None and not _empty(n)]


def prefixes(field: str) -> list[str]:
    """The field and each enclosing field, innermost first: "a.b[0]" -> ["a.b[0]", "a.b", "a", ""]."""
    ends = [m.end() for m in _TOKEN.finditer(field)]
    return [field[:end] for end in reversed(ends)] + [""]


def position_of(index: dict[str, Position], field: str) -> Position | None:
    """Where ``field`` (or, when it is missing, its nearest enclosing field) is written."""
    for candidate in prefixes(field):
        if candidate in index:
            return index[candidate]
    return None


def locate(errors: Iterable[FieldError], read: Callable[[str], bytes | None]) -> tuple[FieldError, ...]:
    """The errors with line and column filled in where missing, reading each named file once via ``read``."""
    errors = tuple(errors)
    indexes: dict[str, list[dict[str, Position]]] = {}
    out: list[FieldError] = []
    for err in errors:
        if err.line is not None:
            out.append(err)
            continue
        if err.file not in indexes:
            data = read(err.file)
            indexes[err.file] = field_positions(data) if data is not None else []
        docs = indexes[err.file]
        number = (err.document or 1) - 1
        found = position_of(docs[number], err.field) if 0 <= number < len(docs) else None
        out.append(dataclasses.replace(err, line=found[0], column=found[1]) if found else err)
    return tuple(out)
