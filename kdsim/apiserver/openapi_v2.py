"""/openapi/v2: the Swagger 2.0 document of every served kind, in JSON or in the gnostic protobuf kubectl asks for.

kubectl 1.27-1.28 fetch it (Accept `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, protobuf only:
they cannot read JSON) for apply, diff and edit. The protobuf is openapi.v2.Document of google/gnostic's
OpenAPIv2.proto, written here field by field (swagger = 1, info = 2, paths = 8, definitions = 9; Schema fields
as numbered there).
"""

from __future__ import annotations

import struct
from typing import Any

import yaml

PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"  # what clients ask for
PROTOBUF_V2_ANSWER = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"  # a media type Go's mime parses


def document(schemas: dict[str, dict[str, Any]], version: str) -> dict[str, Any]:
    """The JSON document: schemas (with #/definitions/ refs) as its definitions."""
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": version}, "paths": {}, "definitions": schemas}


# -- protobuf ------------------------------------------------------------------------------------------
def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _bytes(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _str(number: int, text: str) -> bytes:
    return _bytes(number, text.encode("utf-8")) if text else b""


def _int(number: int, value: int | bool) -> bytes:
    return _varint(number << 3) + _varint(int(value))


def _double(number: int, value: float) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<d", float(value))


def _any_yaml(value: Any) -> bytes:
    """openapi.v2.Any with its yaml (= 2) text."""
    return _str(2, yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip())


def _named(name: str, value: bytes) -> bytes:
    return _str(1, name) + _bytes(2, value)


_NUMBERS = {
    "maximum": (7, _double),
    "minimum": (9, _double),
    "maxLength": (11, _int),
    "minLength": (12, _int),
    "maxItems": (14, _int),
    "minItems": (15, _int),
    "uniqueItems": (16, _int),
    "maxProperties": (17, _int),
    "minProperties": (18, _int),
    "exclusiveMaximum": (8, _int),
    "exclusiveMinimum": (10, _int),
    "readOnly": (27, _int),
}


def schema_pb(s: dict[str, Any]) -> bytes:
    """openapi.v2.Schema."""
    out = bytearray()
    out += _str(1, str(s.get("$ref", ""))) + _str(2, str(s.get("format", ""))) + _str(3, str(s.get("title", "")))
    out += _str(4, str(s.get("description", "")))
    if "default" in s:
        out += _bytes(5, _any_yaml(s["default"]))
    for key, (number, write) in _NUMBERS.items():
        if key in s and not isinstance(s[key], dict):
            out += write(number, s[key])
    out += _str(13, str(s.get("pattern", "")))
    for name in s.get("required") or ():
        out += _bytes(19, str(name).encode())
    for value in s.get("enum") or ():
        out += _bytes(20, _any_yaml(value))
    extra = s.get("additionalProperties")
    if isinstance(extra, dict):
        out += _bytes(21, _bytes(1, schema_pb(extra)))
    elif isinstance(extra, bool):
        out += _bytes(21, _int(2, extra))
    kind = s.get("type")
    if kind:
        out += _bytes(22, b"".join(_bytes(1, str(k).encode()) for k in (kind if isinstance(kind, list) else [kind])))
    items = s.get("items")
    if isinstance(items, dict):
        out += _bytes(23, _bytes(1, schema_pb(items)))
    for part in s.get("allOf") or ():
        out += _bytes(24, schema_pb(part))
    props = s.get("properties")
    if isinstance(props, dict) and props:
        out += _bytes(25, b"".join(_bytes(1, _named(k, schema_pb(v))) for k, v in props.items()))
    for key, value in s.items():
        if key.startswith("x-"):
            out += _bytes(31, _named(key, _any_yaml(value)))
    return bytes(out)


def to_protobuf(doc: dict[str, Any]) -> bytes:
    """openapi.v2.Document of the JSON `doc` (swagger, info, empty paths, definitions)."""
    info = doc.get("info") or {}
    definitions = b"".join(_bytes(1, _named(name, schema_pb(s))) for name, s in (doc.get("definitions") or {}).items())
    return (
        _str(1, str(doc.get("swagger", "2.0")))
        + _bytes(2, _str(1, str(info.get("title", ""))) + _str(2, str(info.get("version", ""))))
        + _bytes(8, b"")
        + _bytes(9, definitions)
    )
