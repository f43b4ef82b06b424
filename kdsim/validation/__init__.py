"""Validation of objects as kube-apiserver does it, raising 422 Invalid with every cause."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kdsim.errors import Cause, invalid
from kubeplumb.fielderrors import FieldError

Validator = Callable[[dict[str, Any], "dict[str, Any] | None"], list[FieldError]]


def _validators() -> dict[str, Validator]:
    from kdsim.validation import configmap, others, pod, pvc, service, statefulset, webhookconfig

    return {
        "StatefulSet": statefulset.validate_statefulset,
        "Pod": pod.validate_pod,
        "Service": service.validate_service,
        "PersistentVolumeClaim": pvc.validate_pvc,
        "ConfigMap": configmap.validate_configmap,
        "Secret": configmap.validate_secret,
        "Namespace": others.validate_namespace,
        "ControllerRevision": others.validate_controller_revision,
        "Lease": others.validate_lease,
        "ValidatingWebhookConfiguration": webhookconfig.validate_validating_webhook_configuration,
    }


def errors_for(kind: str, api_version: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """Every validation error for `obj` (create when `old` is None, else update)."""
    from kdsim.validation import others

    validator = _validators().get(kind)
    if validator is None:
        return others.generic(obj, old, kind)
    return validator(obj, old)


def validate(kind: str, api_version: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Raise errors.invalid(kind, name, causes, group) with ALL causes when `obj` is not valid."""
    errs = errors_for(kind, api_version, obj, old)
    if not errs:
        return
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    name = str((obj.get("metadata") or {}).get("name") or "")
    raise invalid(kind, name, [Cause(e.reason, e.message, e.path) for e in errs], group)
