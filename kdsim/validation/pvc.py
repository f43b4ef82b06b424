"""PersistentVolumeClaim validation and resource.Quantity parsing for size comparisons."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from kdsim.validation import meta
from kubeplumb import fielderrors as fe
from kubeplumb.fielderrors import FieldError

ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
IMMUTABLE_SPEC = "spec is immutable after creation except resources.requests for bound claims"
_SUFFIXES: dict[str, int | Decimal] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[a-zA-Z]*)$")


def parse_quantity(text: Any) -> Decimal:
    """resource.Quantity value of "10Gi", "500m", "1e3"; raises ValueError when malformed."""
    match = _QUANTITY.match(str(text).strip())
    if not match:
        raise ValueError("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    number, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation:
        raise ValueError("unable to parse quantity's suffix") from None
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return value * (Decimal(10) ** int(suffix[1:]))
    if suffix not in _SUFFIXES:
        raise ValueError("unable to parse quantity's suffix")
    return value * Decimal(_SUFFIXES[suffix])


def _storage(spec: dict[str, Any]) -> Any:
    return ((spec.get("resources") or {}).get("requests") or {}).get("storage")


def validate_spec(spec: Any, path: str = "spec") -> list[FieldError]:
    spec = spec if isinstance(spec, dict) else {}
    errs: list[FieldError] = []
    modes = spec.get("accessModes") or []
    if not modes:
        errs.append(fe.required(fe.child(path, "accessModes"), "at least 1 access mode is required"))
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.append(fe.not_supported(fe.child(path, "accessModes"), mode, ACCESS_MODES))
    storage = _storage(spec)
    storage_path = fe.child(path, "resources[storage]")
    if storage is None:
        errs.append(fe.required(storage_path, ""))
    else:
        try:
            if parse_quantity(storage) <= 0:
                errs.append(fe.invalid(storage_path, str(storage), "must be greater than zero"))
        except ValueError as err:
            errs.append(fe.invalid(storage_path, str(storage), str(err)))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in ("Block", "Filesystem"):
        errs.append(fe.not_supported(fe.child(path, "volumeMode"), mode, ["Block", "Filesystem"]))
    return errs


def validate_pvc(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if old is None:
        errs = meta.validate_object_meta(obj.get("metadata"), True, meta.dns_subdomain_name)
        return errs + validate_spec(obj.get("spec"))
    errs = meta.validate_object_meta_update(obj.get("metadata"), old.get("metadata"))
    errs += validate_spec(obj.get("spec"))
    new_spec = dict(obj.get("spec") or {})
    old_spec = dict(old.get("spec") or {})
    if not old_spec.get("volumeName"):
        if "volumeName" in new_spec:
            old_spec["volumeName"] = new_spec["volumeName"]
    bound = (obj.get("status") or {}).get("phase") == "Bound"
    if bound:
        new_spec["resources"] = old_spec.get("resources")
    if not meta.semantic_equal(new_spec, old_spec):
        from kdsim.validation.pod import spec_diff

        errs.append(fe.forbidden("spec", f"{IMMUTABLE_SPEC}\n{spec_diff('core.PersistentVolumeClaimSpec', old_spec, new_spec)}"))
    try:
        new_size, old_size = _storage(obj.get("spec") or {}), _storage(old.get("spec") or {})
        if new_size is not None and old_size is not None and parse_quantity(new_size) < parse_quantity(old_size):
            errs.append(fe.forbidden("spec.resources.requests.storage", "field can not be less than previous value"))
    except ValueError:
        pass
    return errs
