"""Validation of the small kinds: Namespace, ControllerRevision, Lease, Event and any other object's metadata."""

from __future__ import annotations

from typing import Any

from kdsim.validation import meta
from kubeplumb import fielderrors as fe
from kubeplumb.fielderrors import FieldError


def validate_namespace(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if old is None:
        errs = meta.validate_object_meta(obj.get("metadata"), False, meta.dns_label_name)
    else:
        errs = meta.validate_object_meta_update(obj.get("metadata"), old.get("metadata"))
    for finalizer in (obj.get("spec") or {}).get("finalizers") or []:
        if "/" not in str(finalizer) and finalizer != "kubernetes":
            errs.append(
                fe.invalid("spec.finalizers", finalizer, "name is neither a standard finalizer name nor is it fully qualified")
            )
    return errs


def validate_controller_revision(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if old is None:
        errs = meta.validate_object_meta(obj.get("metadata"), True, meta.dns_subdomain_name)
    else:
        errs = meta.validate_object_meta_update(obj.get("metadata"), old.get("metadata"))
    if obj.get("data") is None:
        errs.append(fe.required("data", "data is mandatory"))
    errs += meta.nonnegative(obj.get("revision", 0), "revision")
    if old is not None:
        errs += meta.immutable(obj.get("data"), old.get("data"), "data")
    return errs


def validate_lease(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    errs = generic(obj, old, "Lease")
    spec = obj.get("spec") or {}
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        errs.append(fe.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    errs += meta.nonnegative(spec.get("leaseTransitions"), "spec.leaseTransitions")
    return errs


def generic(obj: dict[str, Any], old: dict[str, Any] | None, kind: str) -> list[FieldError]:
    """ObjectMeta checks only (custom resources and kinds without their own rules)."""
    if old is None:
        return meta.validate_object_meta(obj.get("metadata"), kind not in meta.CLUSTER_SCOPED, meta.dns_subdomain_name)
    return meta.validate_object_meta_update(obj.get("metadata"), old.get("metadata"))
