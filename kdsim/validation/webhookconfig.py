"""ValidatingWebhookConfiguration validation (admissionregistration/validation, the v1 rules that matter here)."""

from __future__ import annotations

from typing import Any

from kdsim.validation import others
from kubeplumb.fielderrors import INVALID, NOT_SUPPORTED, REQUIRED, FieldError, go_quote


def _unsupported(path: str, value: Any, supported: tuple[str, ...]) -> FieldError:
    choices = ", ".join(go_quote(s) for s in supported)
    return FieldError(path, NOT_SUPPORTED, f"Unsupported value: {go_quote(str(value))}: supported values: {choices}")


def validate_validating_webhook_configuration(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    errs = others.generic(obj, old, "ValidatingWebhookConfiguration")
    names: set[str] = set()
    for i, w in enumerate(obj.get("webhooks") or []):
        at = f"webhooks[{i}]"
        name = str(w.get("name") or "")
        if not name:
            errs.append(FieldError(f"{at}.name", REQUIRED, "Required value"))
        elif name.count(".") < 2:
            errs.append(
                FieldError(
                    f"{at}.name",
                    INVALID,
                    f"Invalid value: {go_quote(name)}: should be a domain with at least three segments separated by dots",
                )
            )
        elif name in names:
            errs.append(FieldError(f"{at}.name", "FieldValueDuplicate", f"Duplicate value: {go_quote(name)}"))
        names.add(name)
        side = w.get("sideEffects")
        if side is None:
            errs.append(FieldError(f"{at}.sideEffects", REQUIRED, 'Required value: must specify one of "None", "NoneOnDryRun"'))
        elif side not in ("None", "NoneOnDryRun"):
            errs.append(_unsupported(f"{at}.sideEffects", side, ("None", "NoneOnDryRun")))
        versions = w.get("admissionReviewVersions") or []
        if not versions:
            errs.append(
                FieldError(f"{at}.admissionReviewVersions", REQUIRED, 'Required value: must specify one of "v1", "v1beta1"')
            )
        elif not set(versions) & {"v1", "v1beta1"}:
            errs.append(
                FieldError(
                    f"{at}.admissionReviewVersions",
                    INVALID,
                    f'Invalid value: {go_quote(str(versions))}: must include at least one of "v1", "v1beta1"',
                )
            )
        if "failurePolicy" in w and w["failurePolicy"] not in ("Ignore", "Fail"):
            errs.append(_unsupported(f"{at}.failurePolicy", w["failurePolicy"], ("Fail", "Ignore")))
        if "matchPolicy" in w and w["matchPolicy"] not in ("Exact", "Equivalent"):
            errs.append(_unsupported(f"{at}.matchPolicy", w["matchPolicy"], ("Equivalent", "Exact")))
        timeout = w.get("timeoutSeconds")
        if timeout is not None and not (isinstance(timeout, int) and 1 <= timeout <= 30):
            errs.append(
                FieldError(
                    f"{at}.timeoutSeconds",
                    INVALID,
                    f"Invalid value: {timeout}: the timeout value must be between 1 and 30 seconds",
                )
            )
        cc = w.get("clientConfig") or {}
        if bool(cc.get("url")) == bool(cc.get("service")):
            errs.append(FieldError(f"{at}.clientConfig", REQUIRED, "Required value: exactly one of url or service is required"))
    return errs
