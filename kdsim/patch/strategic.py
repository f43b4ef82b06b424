"""Strategic merge patch with apimachinery strategicpatch semantics and directives."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from kdsim.errors import ApiError, bad_request
from kdsim.patch.schemas import Schema

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
SET_ORDER = "$setElementOrder/"


def _sm_error(message: str) -> ApiError:
    return bad_request(message)


def _strip(value: Any) -> Any:
    """A patch value taken verbatim for an absent field: nulls and directives removed."""
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if v is not None and k != DIRECTIVE and k != RETAIN_KEYS and not k.startswith((DELETE_PRIMITIVE, SET_ORDER))
        }
    if isinstance(value, list):
        return [_strip(v) for v in value if not (isinstance(v, dict) and DIRECTIVE in v)]
    return value


def strategic_merge(original: dict[str, Any], patch: dict[str, Any], schema: Schema | None) -> dict[str, Any]:
    """Merge `patch` into `original` (mutated and returned) using the field strategies in `schema`."""
    schema = schema or {}
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == "replace":
            return cast(dict[str, Any], _strip({k: v for k, v in patch.items() if k != DIRECTIVE}))
        if directive == "delete":
            return {}
        if directive != "merge":
            raise _sm_error(f"Unknown patch type: {directive} in map: {_go_map(patch)}")
        patch = {k: v for k, v in patch.items() if k != DIRECTIVE}
    if RETAIN_KEYS in patch:
        retain = patch[RETAIN_KEYS]
        if not isinstance(retain, list):
            raise _sm_error(f"invalid retainKeys: {retain}")
        for key in patch:
            if not key.startswith("$") and key not in retain:
                raise _sm_error(f"retainKeys directive is present but key {key!s} is not in retainKeys list")
        for key in list(original):
            if key not in retain:
                del original[key]
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key == RETAIN_KEYS or key == DIRECTIVE:
            continue
        if key.startswith(SET_ORDER):
            orders[key[len(SET_ORDER) :]] = value if isinstance(value, list) else []
            continue
        if key.startswith(DELETE_PRIMITIVE):
            field = key[len(DELETE_PRIMITIVE) :]
            current = original.get(field)
            if isinstance(current, list) and isinstance(value, list):
                original[field] = [v for v in current if v not in value]
            continue
        if value is None:
            original.pop(key, None)
            continue
        strategy, merge_key, child = schema.get(key, ("", "", None))
        if key not in original:
            original[key] = _strip(value)
            continue
        current = original[key]
        if isinstance(current, dict) and isinstance(value, dict):
            if "retainKeys" in strategy.split(",") and RETAIN_KEYS not in value:
                pass
            original[key] = strategic_merge(current, value, child)
        elif isinstance(current, list) and isinstance(value, list) and "merge" in strategy.split(","):
            original[key] = _merge_list(current, value, merge_key, child)
        elif (
            isinstance(value, list)
            and value
            and all(isinstance(v, dict) and DIRECTIVE in v for v in value)
            and not isinstance(current, list)
        ):
            original[key] = []
        else:
            original[key] = _strip(value)
    for field, order in orders.items():
        strategy, merge_key, _ = schema.get(field, ("", "", None))
        current = original.get(field)
        if isinstance(current, list):
            present = [v for v in current if _index_of(order, v, merge_key) >= 0]
            server_only = [v for v in current if _index_of(order, v, merge_key) < 0]
            original[field] = _normalize(present, server_only, order, current, merge_key)
    return original


def _go_map(value: dict[str, Any]) -> str:
    return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(value.items())) + "]"


def _key_of(item: Any, merge_key: str) -> Any:
    return item.get(merge_key) if merge_key and isinstance(item, dict) else item


def _index_of(items: list[Any], item: Any, merge_key: str) -> int:
    want = _key_of(item, merge_key)
    for i, candidate in enumerate(items):
        if _key_of(candidate, merge_key) == want and (merge_key == "" or isinstance(candidate, dict)):
            return i
    return -1


def _merge_list(original: list[Any], patch: list[Any], merge_key: str, child: Schema | None) -> list[Any]:
    if not original and not patch:
        return original
    sample = next((v for v in [*patch, *original] if v is not None), None)
    if not isinstance(sample, dict):
        merged = _dedupe([*original, *patch])
        patch_items = [v for v in merged if v in patch]
        server_only = [v for v in merged if v not in patch]
        return _normalize(patch_items, server_only, patch, original, "")
    if not merge_key:
        raise _sm_error("cannot merge lists without merge key")
    plain: list[dict[str, Any]] = []
    replace = False
    for item in patch:
        if not isinstance(item, dict):
            raise _sm_error(f"unable to find api field in struct for the list element {item!r}")
        directive = item.get(DIRECTIVE)
        if directive is None:
            if merge_key not in item:
                raise _sm_error(f"map: {_go_map(item)} does not contain declared merge key: {merge_key}")
            plain.append(item)
        elif directive == "delete":
            if merge_key not in item:
                raise _sm_error(f"map: {_go_map(item)} does not contain declared merge key: {merge_key}")
            original = [o for o in original if _key_of(o, merge_key) != item[merge_key]]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise _sm_error("merging lists cannot yet be specified in the patch")
        else:
            raise _sm_error(f"Unknown patch type: {directive} in map: {_go_map(item)}")
    if replace:
        return [_strip(v) for v in plain]
    server_order = list(original)
    for item in plain:
        idx = _index_of(original, item, merge_key)
        if idx >= 0 and isinstance(original[idx], dict):
            original[idx] = strategic_merge(original[idx], item, child)
        else:
            original.append(_strip(item))
    patch_items = [v for v in original if _index_of(plain, v, merge_key) >= 0]
    server_only = [v for v in original if _index_of(plain, v, merge_key) < 0]
    return _normalize(patch_items, server_only, plain, server_order, merge_key)


def _dedupe(items: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def _normalize(
    patch_items: list[Any], server_only: list[Any], patch_order: list[Any], server_order: list[Any], merge_key: str
) -> list[Any]:
    """normalizeElementOrder: patch items in patch order, server-only items kept where the server had them."""
    patch_sorted = sorted(patch_items, key=lambda v: _sort_pos(patch_order, v, merge_key))
    server_sorted = sorted(server_only, key=lambda v: _sort_pos(server_order, v, merge_key))
    out: list[Any] = []
    i = j = 0
    while i < len(server_sorted) or j < len(patch_sorted):
        if j >= len(patch_sorted):
            out.append(server_sorted[i])
            i += 1
        elif i >= len(server_sorted):
            out.append(patch_sorted[j])
            j += 1
        else:
            li = _index_of(server_order, server_sorted[i], merge_key)
            ri = _index_of(server_order, patch_sorted[j], merge_key)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(server_sorted[i])
                i += 1
            else:
                out.append(patch_sorted[j])
                j += 1
    return out


def _sort_pos(order: list[Any], item: Any, merge_key: str) -> int:
    idx = _index_of(order, item, merge_key)
    return idx if idx >= 0 else len(order)
