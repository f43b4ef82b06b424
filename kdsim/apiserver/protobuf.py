"""Decoding the protobuf bodies kubectl 1.32+ sends to create ConfigMaps, Secrets, Namespaces, ServiceAccounts
and to ask for self access reviews and self reviews (`kubectl auth whoami`).

A real API server decodes protobuf for every built-in kind. The embedded one decodes the few kinds
`kubectl create configmap|secret|namespace|serviceaccount` and `kubectl auth can-i` send, which is what users
type; any other kind
in protobuf is a 415 (as a real server answers for a custom resource). Wire format: the magic ``k8s\\0``,
then a runtime.Unknown message (typeMeta = 1, raw = 2) whose raw bytes are the object's message.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    """A body that is not a Kubernetes protobuf envelope of a kind this server decodes."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varints, bytes for length-delimited fields (fixed ones skipped)."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            yield number, data[pos : pos + size]
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a string field")
    return value.decode("utf-8")


def _entry(value: int | bytes) -> tuple[str, bytes]:
    """One map<string, X> entry (key = 1, value = 2)."""
    if not isinstance(value, bytes):
        raise ProtobufError("expected a map entry")
    key, raw = "", b""
    for number, item in _fields(value):
        if number == 1:
            key = _text(item)
        elif number == 2 and isinstance(item, bytes):
            raw = item
    return key, raw


def _metadata(data: bytes) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    names = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    for number, value in _fields(data):
        if number in names:
            if _text(value):  # Go strings: "" is unset (omitted in JSON)
                meta[names[number]] = _text(value)
        elif number in (11, 12):
            key, raw = _entry(value)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = raw.decode("utf-8")
        elif number == 14:
            meta.setdefault("finalizers", []).append(_text(value))
    return meta


def _configmap(number: int, value: int | bytes, obj: dict[str, Any]) -> None:
    if number in (2, 3):
        key, raw = _entry(value)
        if number == 2:
            obj.setdefault("data", {})[key] = raw.decode("utf-8")
        else:
            obj.setdefault("binaryData", {})[key] = base64.b64encode(raw).decode()
    elif number == 4:
        obj["immutable"] = bool(value)


def _secret(number: int, value: int | bytes, obj: dict[str, Any]) -> None:
    if number in (2, 4):
        key, raw = _entry(value)
        if number == 2:
            obj.setdefault("data", {})[key] = base64.b64encode(raw).decode()
        else:
            obj.setdefault("stringData", {})[key] = raw.decode("utf-8")
    elif number == 3:
        obj["type"] = _text(value)
    elif number == 5:
        obj["immutable"] = bool(value)


def _namespace(number: int, value: int | bytes, obj: dict[str, Any]) -> None:
    if number == 2 and isinstance(value, bytes):
        finalizers = [_text(v) for n, v in _fields(value) if n == 1]
        obj["spec"] = {"finalizers": finalizers} if finalizers else {}


def _serviceaccount(number: int, value: int | bytes, obj: dict[str, Any]) -> None:
    if number == 4:
        obj["automountServiceAccountToken"] = bool(value)


def _strings(value: int | bytes, names: dict[int, str]) -> dict[str, Any]:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a message field")
    return {names[n]: _text(v) for n, v in _fields(value) if n in names}


_RESOURCE_ATTRIBUTES = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource", 7: "name"}


def _access_review(number: int, value: int | bytes, obj: dict[str, Any]) -> None:
    """authorization.k8s.io/v1 SelfSubjectAccessReview: spec (2) holds resourceAttributes (1) or
    nonResourceAttributes (2) (`kubectl auth can-i`)."""
    if number == 2 and isinstance(value, bytes):
        spec = obj.setdefault("spec", {})
        for n, v in _fields(value):
            if n == 1:
                spec["resourceAttributes"] = _strings(v, _RESOURCE_ATTRIBUTES)
            elif n == 2:
                spec["nonResourceAttributes"] = _strings(v, {1: "path", 2: "verb"})


def _rules_review(number: int, value: int | bytes, obj: dict[str, Any]) -> None:
    """authorization.k8s.io/v1 SelfSubjectRulesReview: spec (2) holds namespace (1) (`kubectl auth can-i --list`)."""
    if number == 2:
        obj["spec"] = _strings(value, {1: "namespace"})


def _delete_options(number: int, value: int | bytes, obj: dict[str, Any]) -> None:
    """meta/v1 DeleteOptions (helm deletes built-ins with a protobuf body): gracePeriodSeconds (1), preconditions
    (2: uid 1, resourceVersion 2), orphanDependents (3), propagationPolicy (4), dryRun (5, repeated)."""
    if number == 1 and isinstance(value, int):
        obj["gracePeriodSeconds"] = value
    elif number == 2:
        obj["preconditions"] = _strings(value, {1: "uid", 2: "resourceVersion"})
    elif number == 3 and isinstance(value, int):
        obj["orphanDependents"] = bool(value)
    elif number == 4:
        obj["propagationPolicy"] = _text(value)
    elif number == 5:
        obj.setdefault("dryRun", []).append(_text(value))


KINDS: dict[str, Callable[[int, int | bytes, dict[str, Any]], None]] = {
    "ConfigMap": _configmap,
    "Secret": _secret,
    "Namespace": _namespace,
    "ServiceAccount": _serviceaccount,
    "SelfSubjectAccessReview": _access_review,
    "SelfSubjectRulesReview": _rules_review,
    "SelfSubjectReview": lambda _n, _v, _o: None,  # `kubectl auth whoami`: metadata only
    "DeleteOptions": _delete_options,
}
API_VERSIONS = {
    "SelfSubjectAccessReview": "authorization.k8s.io/v1",
    "SelfSubjectRulesReview": "authorization.k8s.io/v1",
    "DeleteOptions": "meta.k8s.io/v1",
}


def decode(body: bytes, kind: str) -> dict[str, Any]:
    """The JSON form of a protobuf ``kind`` object (apiVersion v1); ProtobufError when it cannot be decoded."""
    field = KINDS.get(kind)
    if field is None:
        raise ProtobufError(f"{kind} in protobuf is not decoded by the embedded cluster")
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic")
    envelope = list(_fields(body[len(MAGIC) :]))
    raw = next((v for n, v in envelope if n == 2 and isinstance(v, bytes)), None)
    if raw is None:
        raise ProtobufError("the envelope carries no object")
    type_meta = next((v for n, v in envelope if n == 1 and isinstance(v, bytes)), b"")
    api_version = next((_text(v) for n, v in _fields(type_meta) if n == 1), "")
    obj: dict[str, Any] = {"apiVersion": api_version or API_VERSIONS.get(kind, "v1"), "kind": kind}
    for number, value in _fields(raw):
        if number == 1 and isinstance(value, bytes):
            obj["metadata"] = _metadata(value)
        else:
            field(number, value, obj)
    return obj
