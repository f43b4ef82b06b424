"""PATCH bodies applied like kube-apiserver: JSON patch, JSON merge patch, strategic merge patch, apply."""

from __future__ import annotations

import copy
import json
from typing import Any, Iterable

import yaml

from gitops_kd.sim.errors import ApiError, Cause, bad_request

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
BUILTIN_TYPES = [JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH]
CUSTOM_TYPES = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]

BUILTIN_GROUPS = frozenset({
    "", "apps", "batch", "autoscaling", "policy", "coordination.k8s.io", "events.k8s.io", "rbac.authorization.k8s.io",
    "networking.k8s.io", "storage.k8s.io", "apiextensions.k8s.io", "admissionregistration.k8s.io",
    "scheduling.k8s.io", "node.k8s.io", "discovery.k8s.io", "certificates.k8s.io", "flowcontrol.apiserver.k8s.io",
    "authentication.k8s.io", "authorization.k8s.io", "apiregistration.k8s.io", "resource.k8s.io",
})

# --- strategic merge patch metadata: field -> (patchStrategy, patchMergeKey, element/child schema) -------------
Schema = dict[str, tuple[str, str, "Schema | None"]]
_OBJECT_META: Schema = {"finalizers": ("merge", "", None), "ownerReferences": ("merge", "uid", None)}
_CONTAINER: Schema = {
    "ports": ("merge", "containerPort", None), "env": ("merge", "name", None),
    "volumeMounts": ("merge", "mountPath", None), "volumeDevices": ("merge", "devicePath", None),
}
_POD_SPEC: Schema = {
    "containers": ("merge", "name", _CONTAINER), "initContainers": ("merge", "name", _CONTAINER),
    "ephemeralContainers": ("merge", "name", _CONTAINER), "volumes": ("merge,retainKeys", "name", None),
    "imagePullSecrets": ("merge", "name", None), "hostAliases": ("merge", "ip", None),
    "topologySpreadConstraints": ("merge", "topologyKey", None), "schedulingGates": ("merge", "name", None),
    "resourceClaims": ("merge,retainKeys", "name", None),
}
_CONDITIONS: Schema = {"conditions": ("merge", "type", None)}
_TEMPLATE: Schema = {"metadata": ("", "", _OBJECT_META), "spec": ("", "", _POD_SPEC)}
_WORKLOAD: Schema = {"metadata": ("", "", _OBJECT_META), "spec": ("", "", {"template": ("", "", _TEMPLATE)}),
                     "status": ("", "", _CONDITIONS)}
_JOB_SPEC: Schema = {"template": ("", "", _TEMPLATE)}
_KIND_SCHEMAS: dict[str, Schema] = {
    "Pod": {"metadata": ("", "", _OBJECT_META), "spec": ("", "", _POD_SPEC),
            "status": ("", "", {"conditions": ("merge", "type", None), "podIPs": ("merge", "ip", None)})},
    "PodTemplate": {"metadata": ("", "", _OBJECT_META), "template": ("", "", _TEMPLATE)},
    "StatefulSet": _WORKLOAD, "Deployment": {**_WORKLOAD, "spec": ("", "", {"template": ("", "", _TEMPLATE),
                                                                            "strategy": ("retainKeys", "", None)})},
    "ReplicaSet": _WORKLOAD, "DaemonSet": _WORKLOAD, "ReplicationController": _WORKLOAD,
    "Job": {"metadata": ("", "", _OBJECT_META), "spec": ("", "", _JOB_SPEC), "status": ("", "", _CONDITIONS)},
    "Service": {"metadata": ("", "", _OBJECT_META), "spec": ("", "", {"ports": ("merge", "port", None)}),
                "status": ("", "", _CONDITIONS)},
    "Node": {"metadata": ("", "", _OBJECT_META),
             "status": ("", "", {"conditions": ("merge", "type", None), "addresses": ("merge", "type", None)})},
}
_DEFAULT_SCHEMA: Schema = {"metadata": ("", "", _OBJECT_META), "status": ("", "", _CONDITIONS)}

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
SET_ORDER = "$setElementOrder/"


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def is_builtin(api_version: str) -> bool:
    """Whether objects of this apiVersion are served by the built-in registry (not a CRD)."""
    return _group(api_version) in BUILTIN_GROUPS


def unsupported_media(types: list[str]) -> ApiError:
    """415 exactly as negotiation.NewUnsupportedMediaTypeError words it."""
    return ApiError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: "
                    + ", ".join(types))


def apply_patch(original: dict[str, Any], body: bytes, content_type: str, *, kind: str, api_version: str) -> dict[str, Any]:
    """Return a new object: `original` patched by `body`; never mutates `original`."""
    media = content_type.split(";", 1)[0].strip().lower()
    builtin = is_builtin(api_version)
    allowed = BUILTIN_TYPES if builtin else CUSTOM_TYPES
    if media not in allowed:
        raise unsupported_media(allowed)
    doc = copy.deepcopy(original)
    if media == APPLY_PATCH:
        return _apply_config(doc, body, kind, builtin)
    try:
        patch = json.loads(body.decode("utf-8") if body else "null")
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        if media == MERGE_PATCH:
            raise bad_request("Invalid JSON Patch") from None
        raise bad_request(f"error decoding patch: {err}") from None
    if media == JSON_PATCH:
        return json_patch(doc, patch)
    if media == MERGE_PATCH:
        if not isinstance(patch, dict):
            raise bad_request("Invalid JSON Patch")
        return merge_patch(doc, patch)
    if not isinstance(patch, dict):
        raise bad_request(f"json: cannot unmarshal {_go_kind(patch)} into Go value of type map[string]interface {{}}")
    return strategic_merge(doc, patch, _KIND_SCHEMAS.get(kind, _DEFAULT_SCHEMA))


def _go_kind(value: object) -> str:
    return {list: "array", str: "string", bool: "bool", int: "number", float: "number"}.get(type(value), "null")


# --- RFC 7386 ---------------------------------------------------------------------------------------------------

def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (returns the merged value; dicts in `target` may be reused)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --- RFC 6902 (evanphx/json-patch v4 semantics and wording) -----------------------------------------------------

class _PatchFailed(Exception):
    pass


def _rejected(message: str) -> ApiError:
    return ApiError(422, "Invalid", "the server rejected our request due to an error in our request",
                    None, [Cause("UnexpectedServerResponse", message, "")])


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
        raise bad_request(f"json: cannot unmarshal {_go_kind(ops)} into Go value of type jsonpatch.Patch")
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
                        raise _PatchFailed(f"replace operation does not apply: doc is missing key: {path}: "
                                           "missing value") from None
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
            raise _PatchFailed(f"{kind} operation does not apply: doc is missing destination path: {path}: "
                               "missing value")
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


# --- strategic merge patch (apimachinery strategicpatch semantics) ---------------------------------------------

def _sm_error(message: str) -> ApiError:
    return bad_request(message)


def _strip(value: Any) -> Any:
    """A patch value taken verbatim for an absent field: nulls and directives removed."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items()
                if v is not None and k != DIRECTIVE and k != RETAIN_KEYS
                and not k.startswith((DELETE_PRIMITIVE, SET_ORDER))}
    if isinstance(value, list):
        return [_strip(v) for v in value if not (isinstance(v, dict) and DIRECTIVE in v)]
    return value


def strategic_merge(original: dict[str, Any], patch: dict[str, Any], schema: Schema | None) -> dict[str, Any]:
    """Merge `patch` into `original` (mutated and returned) using the field strategies in `schema`."""
    schema = schema or {}
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == "replace":
            return _strip({k: v for k, v in patch.items() if k != DIRECTIVE})
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
            orders[key[len(SET_ORDER):]] = value if isinstance(value, list) else []
            continue
        if key.startswith(DELETE_PRIMITIVE):
            field = key[len(DELETE_PRIMITIVE):]
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
        elif isinstance(value, list) and value and all(isinstance(v, dict) and DIRECTIVE in v for v in value) \
                and not isinstance(current, list):
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


def _normalize(patch_items: list[Any], server_only: list[Any], patch_order: list[Any], server_order: list[Any],
               merge_key: str) -> list[Any]:
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


# --- server-side apply (simplified: no managedFields ownership) ------------------------------------------------

def _apply_config(live: dict[str, Any], body: bytes, kind: str, builtin: bool) -> dict[str, Any]:
    try:
        config = yaml.safe_load(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, yaml.YAMLError) as err:
        raise bad_request(f"error decoding YAML: {err}") from None
    if not isinstance(config, dict):
        raise bad_request("error decoding YAML: the body is not an object")
    if builtin:
        return strategic_merge(live, config, _KIND_SCHEMAS.get(kind, _DEFAULT_SCHEMA))
    return merge_patch(live, config)
