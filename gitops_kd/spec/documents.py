"""Split one file's bytes into parsed documents (YAML, multi-document, or JSON, chosen by content)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from gitops_kd.spec.errors import FieldError
from gitops_kd.spec.limits import (
    MAX_REQUEST_BODY_BYTES,
    document_count_error,
    expanded_size_error,
    file_size_error,
    value_errors,
)


@dataclass(frozen=True)
class Document:
    """One non-empty document of a file; ``index`` is 1-based among the file's non-empty documents."""

    index: int
    of: int
    data: Any

    @property
    def number(self) -> int | None:
        """The document number to show in errors (None when the file holds one document)."""
        return self.index if self.of > 1 else None


class _DuplicateKey(yaml.MarkedYAMLError):
    pass


def _strict_mapping(loader: yaml.constructor.SafeConstructor, node: yaml.MappingNode) -> None:
    """Refuse a duplicate mapping key (the API server's strict decoding does too)."""
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:
            continue
        if duplicate:
            raise _DuplicateKey(
                None,
                None,
                f'duplicate key "{key}" (first at line {seen[key].start_mark.line + 1})',
                key_node.start_mark,
            )
        seen[key] = key_node


class _StrictLoader(yaml.SafeLoader):
    """The pure-Python parser, strict about duplicate keys: its error messages are the ones reported."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        _strict_mapping(self, node)
        return super().construct_mapping(node, deep=deep)


class _FastLoader(yaml.CSafeLoader):
    """libyaml's parser (about ten times faster), as strict; a file it refuses is parsed again by _StrictLoader,
    so errors read the same whichever parser read the file first."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        _strict_mapping(self, node)
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StrictLoader.construct_mapping)
_FastLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _FastLoader.construct_mapping)


def split_documents(path: str, data: bytes) -> tuple[list[Document], list[FieldError]]:
    """Parse a file into its non-empty documents, or return the syntax and input-limit errors found
    (gitops_kd.spec.limits: file size, number of documents, nesting depth, string sizes)."""
    too_big = file_size_error(path, len(data))
    if too_big is not None:
        return [], [too_big]
    documents, errors = _parse(path, data)
    if errors:
        return [], errors
    too_many = document_count_error(path, len(documents))
    if too_many is not None:
        return [], [too_many]
    errors = [e for d in documents for e in value_errors(path, d.data, d.number)]
    return ([], errors) if errors else (documents, [])


def _parse(path: str, data: bytes) -> tuple[list[Document], list[FieldError]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [], [FieldError(path, "", f"not UTF-8 text (byte {exc.start}: {exc.reason})")]
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            doc = json.loads(text, object_pairs_hook=_no_duplicate_pairs)
        except RecursionError:
            return [], [FieldError(path, "", "invalid JSON: nested too deeply")]
        except ValueError as exc:
            json_error = exc
        else:
            return [Document(1, 1, doc)], []
        docs, errors = _yaml_documents(path, text)
        if errors:
            line, column = _json_position(json_error)
            return [], [FieldError(path, "", f"invalid JSON: {_json_reason(json_error)}", None, line, column)]
        return docs, []
    return _yaml_documents(path, text)


def _no_duplicate_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f'duplicate key "{key}"')
        result[key] = value
    return result


def _json_position(exc: Exception) -> tuple[int | None, int | None]:
    if isinstance(exc, json.JSONDecodeError):
        return exc.lineno, exc.colno
    return None, None


def _json_reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
    return str(exc)


# Alias expansion limits ("billion laughs"), after go-yaml's: the share of nodes produced by aliases may be
# 99% up to 400k decoded nodes, falling to 10% at 4M; and never more than MAX_EXPANDED_NODES in all.
ALIAS_RATIO_LOW, ALIAS_RATIO_HIGH = 400_000, 4_000_000
MAX_EXPANDED_NODES = 2_000_000


def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= ALIAS_RATIO_LOW:
        return 0.99
    if decoded >= ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - ALIAS_RATIO_LOW) / (ALIAS_RATIO_HIGH - ALIAS_RATIO_LOW)


def _expansion(root: yaml.Node) -> tuple[int, int, int]:
    """(nodes after expanding every alias, of which produced by aliases, bytes of scalars after expanding every
    alias), in time linear in the distinct nodes: PyYAML composes an alias as the anchored node object itself,
    so sizes are memoized by identity."""
    size: dict[int, tuple[int, int]] = {}  # node id -> (nodes, scalar bytes) of its expanded subtree
    first_seen: set[int] = set()
    aliased = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            children = _children(node)
            own = len(str(node.value).encode("utf-8", "surrogatepass")) if isinstance(node, yaml.ScalarNode) else 0
            sizes = [size.get(id(c), (0, 0)) for c in children]  # (0, 0): a recursive alias, not yet sized
            size[key] = (1 + sum(n for n, _ in sizes), own + sum(b for _, b in sizes))
            continue
        if key in first_seen:  # a later occurrence is an alias: its whole subtree is decoded again
            aliased += size.get(key, (0, 0))[0]
            continue
        first_seen.add(key)
        stack.append((node, True))
        for child in reversed(_children(node)):
            stack.append((child, False))
    nodes, data = size[id(root)]  # a parent sums its children as they occur: aliases already expanded
    return nodes, aliased, data


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_aliasing(path: str, node: yaml.Node) -> FieldError | None:
    """The refusal of a composed document whose alias expansion is too large (in nodes, or in bytes: aliases of a
    large string count its size each time), decided before the document is constructed."""
    decoded, aliased, expanded_bytes = _expansion(node)
    line, column = node.start_mark.line + 1, node.start_mark.column + 1
    if decoded > MAX_EXPANDED_NODES or (aliased > 100 and decoded > 1000 and aliased / decoded > _allowed_alias_ratio(decoded)):
        return FieldError(
            path,
            "",
            f"invalid YAML: line {line}: document contains excessive aliasing ({decoded} "
            f"nodes once aliases are expanded, {aliased} of them from aliases); refused",
            None,
            line,
            column,
        )
    return expanded_size_error(path, expanded_bytes, None, line, column)


def _load_all(path: str, text: str) -> tuple[list[Any], list[FieldError]]:
    """yaml.load_all with the alias expansion checked on each composed document before it is constructed: by
    libyaml first, and when it finds anything wrong, again by the pure-Python parser for its wording."""
    try:
        return _load_with(_FastLoader, path, text)
    except (yaml.YAMLError, RecursionError):
        return _load_with(_StrictLoader, path, text)


def _may_expand(text: str) -> bool:
    """Whether a document of ``text`` could exceed the expansion limits. Without an alias (no ``*`` anywhere) a
    document has fewer nodes than twice its characters and at most 1.5 bytes of scalars per byte of text (an
    escape such as ``\\L`` decodes 2 bytes to 3), so a small file without one needs no count."""
    if "*" in text:
        return True
    size = len(text.encode("utf-8", "surrogatepass"))
    return 2 * size > MAX_EXPANDED_NODES or 3 * size > 2 * MAX_REQUEST_BODY_BYTES


def _load_with(loader_type: Any, path: str, text: str) -> tuple[list[Any], list[FieldError]]:
    loader = loader_type(text)
    raw: list[Any] = []
    check = _may_expand(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            problem = _check_aliasing(path, node) if node is not None and check else None
            if problem is not None:
                return [], [problem]
            raw.append(loader.construct_document(node))
    finally:
        loader.dispose()
    return raw, []


def _yaml_documents(path: str, text: str) -> tuple[list[Document], list[FieldError]]:
    try:
        raw, errors = _load_all(path, text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
        return [], [FieldError(path, "", f"invalid YAML: {_yaml_reason(exc)}", None, line, column)]
    except yaml.YAMLError as exc:
        return [], [FieldError(path, "", f"invalid YAML: {exc}")]
    except RecursionError:
        return [], [FieldError(path, "", "invalid YAML: nested too deeply")]
    if errors:
        return [], errors
    kept = [d for d in raw if d is not None]
    return [Document(i + 1, len(kept), d) for i, d in enumerate(kept)], []


def _yaml_reason(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "syntax error"
    if mark is None:
        return problem
    where = f"line {mark.line + 1}, column {mark.column + 1}"
    if exc.context and exc.problem and exc.context_mark is not None:
        return f"{where}: {problem} ({exc.context} at line {exc.context_mark.line + 1})"
    return f"{where}: {problem}"
