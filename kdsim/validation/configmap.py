"""ConfigMap and Secret validation: data keys, size limits, the `immutable` flag, Secret type rules."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from kdsim import namerules
from kdsim.validation import meta
from kubeplumb import fielderrors as fe
from kubeplumb.fielderrors import FieldError

MAX_SIZE = 1024 * 1024
IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"
_REQUIRED_KEYS = {
    "kubernetes.io/dockerconfigjson": [".dockerconfigjson"],
    "kubernetes.io/dockercfg": [".dockercfg"],
    "kubernetes.io/tls": ["tls.crt", "tls.key"],
    "kubernetes.io/ssh-auth": ["ssh-privatekey"],
}


def _keys(data: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in sorted(data or {}):
        errs.extend(fe.invalid(fe.key(path, key), key, m) for m in namerules.is_config_map_key(key))
    return errs


def _immutable_update(new: dict[str, Any], old: dict[str, Any], fields: tuple[str, ...]) -> list[FieldError]:
    if old.get("immutable") is not True:
        return []
    errs: list[FieldError] = []
    if new.get("immutable") is not True:
        errs.append(fe.forbidden("immutable", IMMUTABLE_WHEN_SET))
    for name in fields:
        if not meta.semantic_equal(new.get(name), old.get(name)):
            errs.append(fe.forbidden(name, IMMUTABLE_WHEN_SET))
    return errs


def validate_configmap(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if old is None:
        errs = meta.validate_object_meta(obj.get("metadata"), True, meta.dns_subdomain_name)
    else:
        errs = meta.validate_object_meta_update(obj.get("metadata"), old.get("metadata"))
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    errs += _keys(data, "data")
    errs += _keys(binary, "binaryData")
    for key in sorted(set(data) & set(binary)):
        errs.append(fe.invalid(fe.key("binaryData", key), key, "duplicate of key present in data"))
    size = sum(len(k) + len(str(v)) for k, v in data.items()) + sum(len(k) + len(str(v)) for k, v in binary.items())
    if size > MAX_SIZE:
        errs.append(fe.too_long("", MAX_SIZE))
    if old is not None:
        errs += _immutable_update(obj, old, ("data", "binaryData"))
    return errs


def validate_secret(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if old is None:
        errs = meta.validate_object_meta(obj.get("metadata"), True, meta.dns_subdomain_name)
    else:
        errs = meta.validate_object_meta_update(obj.get("metadata"), old.get("metadata"))
    data = obj.get("data") or {}
    errs += _keys(data, "data")
    errs += _keys(obj.get("stringData"), "stringData")
    total = 0
    for key in sorted(data):
        try:
            total += len(base64.b64decode(str(data[key]), validate=True))
        except (binascii.Error, ValueError):
            errs.append(fe.invalid(fe.key("data", key), "<secret contents redacted>", "illegal base64 data"))
    if total > MAX_SIZE:
        errs.append(fe.too_long("data", MAX_SIZE))
    secret_type = obj.get("type", "Opaque")
    present = set(data) | set(obj.get("stringData") or {})
    for key in _REQUIRED_KEYS.get(secret_type, []):
        if key not in present:
            errs.append(fe.required(fe.key("data", key), ""))
    if secret_type == "kubernetes.io/service-account-token":
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if not annotations.get("kubernetes.io/service-account.name"):
            errs.append(fe.required("metadata.annotations[kubernetes.io/service-account.name]", ""))
    if old is not None:
        errs += meta.immutable(obj.get("type", ""), old.get("type", ""), "type")
        errs += _immutable_update(obj, old, ("data",))
    return errs
