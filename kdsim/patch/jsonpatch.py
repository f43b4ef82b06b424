"""RFC 6902 JSON patch with evanphx/json-patch v4 semantics and the apiserver's wording."""

from __future__ import annotations

import copy
from typing import Any

from kdsim.errors import ApiError, Cause, bad_request


def go_kind(value: object) -> str:
    """The JSON kind Go's decoder names in an unmarshal error."""
    return {list: "array", str: "string", bool: "bool", int: "number", float: "number"}.get(type(value), "null")


class _PatchFailed(Exception):
    pass


def _rejected(message: str) -> ApiError:
    return ApiError(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
        None,
        [Cause("UnexpectedServerResponse", message, "")],
    )


def _decode(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _find(doc: Any, path: str) -> tuple[Any, str] | None:
    parts = path.split("/")
    if len(parts) < 2:
        return None
    node = doc
    for part in parts[1:-1]:
        key = _decode(part)
        if isinstance(node, dict):
            node = node.get(key)
        elif isinstance(node, list):
            try:
                idx = int(key)
            except ValueError:
                return None
            node = node[idx] if 0 <= idx < len(node) else None
        else:
            return None
        if not isinstance(node, (dict, list)):
            return None
    return node, _decode(parts[-1])


def _index(container: list[Any], key: str, *, adding: bool = False) -> int:
    if adding and key == "-":
        return len(container)
    try:
        idx = int(key)
    except ValueError:
        raise _PatchFailed(f'strconv.Atoi: parsing "{key}": invalid syntax') from None
    limit = len(container) if adding else len(container) - 1
    if idx < 0 or idx > limit:
        raise _PatchFailed(f"Unable to access invalid index: {idx}: invalid index referenced")
    return idx


def _get(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        return container.get(key)
    return container[_index(container, key)]


def _add(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
    else:
        container.insert(_index(container, key, adding=True), value)


def _remove(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        if key not in container:
            raise _PatchFailed(f"Unable to remove nonexistent key: {key}: missing value")
        return container.pop(key)
    return container.pop(_index(container, key))


def _op_path(op: dict[str, Any], field: str, kind: str) -> str:
    value = op.get(field)
    if not isinstance(value, str):
        word = "from" if field == "from" else "path"
        raise _PatchFailed(f"{kind} operation failed to decode {word}: missing value")
    return value


def json_patch(doc: Any, ops: Any) -> Any:
    """Apply an RFC 6902 patch to `doc` in place and return it; errors are worded like the apiserver."""
    if not isinstance(ops, list):
        raise bad_request(f"json: cannot unmarshal {go_kind(ops)} into Go value of type jsonpatch.Patch")
    try:
        for op in ops:
            if not isinstance(op, dict):
                raise _PatchFailed("Unexpected kind: unknown")
            _apply_op(doc, op)
    except _PatchFailed as err:
        raise _rejected(str(err)) from None
    return doc


def _apply_op(doc: Any, op: dict[str, Any]) -> None:
    kind = op.get("op")
    if kind in ("add", "remove", "replace", "test"):
        path = _op_path(op, "path", str(kind))
        found = _find(doc, path)
        if found is None:
            where = f'"{path}"' if kind in ("add", "remove") else path
            prefix = "is missing path" if kind == "test" else "doc is missing path"
            raise _PatchFailed(f"{kind} operation does not apply: {prefix}: {where}: missing value")
        container, key = found
        try:
            if kind == "add":
                _add(container, key, copy.deepcopy(op.get("value")))
            elif kind == "remove":
                _remove(container, key)
            elif kind == "replace":
                if isinstance(container, list):
                    try:
                        container[_index(container, key)] = copy.deepcopy(op.get("value"))
                    except _PatchFailed:
                        raise _PatchFailed(
                            f"replace operation does not apply: doc is missing key: {path}: missing value"
                        ) from None
                else:
                    container[key] = copy.deepcopy(op.get("value"))
            else:
                current = _get(container, key)
                if current is None and "value" in op and op["value"] is None:
                    return
                if current is None or not _json_equal(current, op.get("value")):
                    raise _PatchFailed(f"testing value {path} failed: test failed")
        except _PatchFailed as err:
            if str(err).startswith(("testing value", "replace operation")):
                raise
            raise _PatchFailed(f"error in {kind} for path: '{path}': {err}") from None
        return
    if kind in ("move", "copy"):
        source = _op_path(op, "from", str(kind))
        found = _find(doc, source)
        if found is None:
            raise _PatchFailed(f"{kind} operation does not apply: doc is missing from path: {source}: missing value")
        container, key = found
        try:
            value = _remove(container, key) if kind == "move" else copy.deepcopy(_get(container, key))
        except _PatchFailed as err:
            raise _PatchFailed(f"error in {kind} for path: '{key}': {err}") from None
        path = _op_path(op, "path", str(kind))
        target = _find(doc, path)
        if target is None:
            raise _PatchFailed(f"{kind} operation does not apply: doc is missing destination path: {path}: missing value")
        try:
            _add(target[0], target[1], value)
        except _PatchFailed as err:
            raise _PatchFailed(f"error in {kind} for path: '{path}': {err}") from None
        return
    raise _PatchFailed(f"Unexpected kind: {kind if kind is not None else 'unknown'}")


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers compare by value (1 == 1.0), booleans only equal booleans."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b
