"""StatefulSet validation on create and update, worded like pkg/apis/apps/validation."""

from __future__ import annotations

import copy
from typing import Any

from kdsim.errors import ApiError
from kdsim.selectors import label_selector_from_dict
from kdsim.validation import meta
from kubeplumb import fielderrors as fe
from kubeplumb.fielderrors import FieldError

FORBIDDEN_UPDATE = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
    "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
)
_MUTABLE = ("replicas", "template", "updateStrategy", "minReadySeconds", "ordinals", "persistentVolumeClaimRetentionPolicy")
_RETENTION = ["Retain", "Delete"]


def validate_spec(spec: Any, path: str = "spec") -> list[FieldError]:
    """ValidateStatefulSetSpec (the pod template's spec is not pod-validated here, as upstream)."""
    spec = spec if isinstance(spec, dict) else {}
    errs: list[FieldError] = []
    policy = spec.get("podManagementPolicy", "")
    if not policy:
        errs.append(fe.required(fe.child(path, "podManagementPolicy"), ""))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(fe.invalid(fe.child(path, "podManagementPolicy"), policy, "must be 'OrderedReady' or 'Parallel'"))
    strategy = spec.get("updateStrategy") or {}
    kind = strategy.get("type", "")
    rolling_path = fe.child(fe.child(path, "updateStrategy"), "rollingUpdate")
    if not kind:
        errs.append(fe.required(fe.child(path, "updateStrategy"), ""))
    elif kind == "OnDelete":
        if strategy.get("rollingUpdate") is not None:
            errs.append(
                fe.invalid(
                    rolling_path, _go_rolling(strategy["rollingUpdate"]), "only allowed for updateStrategy 'RollingUpdate'"
                )
            )
    elif kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if isinstance(rolling, dict):
            errs += meta.nonnegative(rolling.get("partition", 0), fe.child(rolling_path, "partition"))
    else:
        errs.append(
            fe.invalid(
                fe.child(path, "updateStrategy"),
                _go_struct("apps.StatefulSetUpdateStrategy", strategy),
                "must be 'RollingUpdate' or 'OnDelete'",
            )
        )
    retention = spec.get("persistentVolumeClaimRetentionPolicy") or {}
    for key in ("whenDeleted", "whenScaled"):
        value = retention.get(key, "")
        if value not in _RETENTION:
            errs.append(
                fe.not_supported(fe.child(fe.child(path, "persistentVolumeClaimRetentionPolicy"), key), value, _RETENTION)
            )
    errs += meta.nonnegative(spec.get("replicas", 0), fe.child(path, "replicas"))
    if isinstance(spec.get("ordinals"), dict):
        errs += meta.nonnegative(spec["ordinals"].get("start", 0), fe.child(path, "ordinals.start"))
    errs += meta.nonnegative(spec.get("minReadySeconds", 0), fe.child(path, "minReadySeconds"))
    selector = spec.get("selector")
    if selector is None:
        errs.append(fe.required(fe.child(path, "selector"), ""))
    else:
        errs += meta.validate_label_selector(selector, fe.child(path, "selector"))
        if not (selector.get("matchLabels") or selector.get("matchExpressions")):
            errs.append(
                fe.invalid(fe.child(path, "selector"), _go_selector(selector), "empty selector is invalid for statefulset")
            )
    template = spec.get("template") or {}
    template_meta = template.get("metadata") or {}
    labels = template_meta.get("labels") or {}
    try:
        parsed = label_selector_from_dict(selector) if selector is not None else None
    except ApiError:
        parsed = None
        errs.append(fe.invalid(fe.child(path, "selector"), _go_selector(selector or {}), ""))
    tpath = fe.child(path, "template")
    if parsed is not None and not parsed.empty() and not parsed.matches(labels):
        errs.append(
            fe.invalid(
                fe.child(fe.child(tpath, "metadata"), "labels"), _go_labels(labels), "`selector` does not match template `labels`"
            )
        )
    errs += meta.validate_labels(template_meta.get("labels"), fe.child(tpath, "labels"))
    errs += meta.validate_annotations(template_meta.get("annotations"), fe.child(tpath, "annotations"))
    pod_spec = template.get("spec") or {}
    restart = pod_spec.get("restartPolicy", "")
    if restart != "Always":
        errs.append(fe.not_supported(fe.child(tpath, "spec.restartPolicy"), restart, ["Always"]))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(
            fe.forbidden(fe.child(tpath, "spec.activeDeadlineSeconds"), "activeDeadlineSeconds in StatefulSet is not Supported")
        )
    return errs


class _GoValue:
    """A bad value rendered verbatim (a Go struct's %#v) by field errors."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _go_labels(labels: dict[str, Any]) -> Any:
    return {str(k): str(v) for k, v in labels.items()} if labels else _GoValue("map[string]string(nil)")


def _go_selector(selector: dict[str, Any]) -> Any:
    labels = selector.get("matchLabels")
    shown = "map[string]string(nil)" if labels is None else fe.go_sharp_v({str(k): str(v) for k, v in labels.items()})
    if labels == {}:
        shown = "map[string]string{}"
    exprs = selector.get("matchExpressions")
    exprs_shown = "[]v1.LabelSelectorRequirement(nil)" if exprs is None else "[]v1.LabelSelectorRequirement{...}"
    if exprs == []:
        exprs_shown = "[]v1.LabelSelectorRequirement{}"
    return _GoValue(f"v1.LabelSelector{{MatchLabels:{shown}, MatchExpressions:{exprs_shown}}}")


def _go_rolling(rolling: Any) -> Any:
    rolling = rolling if isinstance(rolling, dict) else {}
    unavailable = rolling.get("maxUnavailable")
    shown = "(*intstr.IntOrString)(nil)" if unavailable is None else f"(*intstr.IntOrString)({fe.render_value(unavailable)})"
    return _GoValue(f"apps.RollingUpdateStatefulSetStrategy{{Partition:{rolling.get('partition', 0)}, MaxUnavailable:{shown}}}")


def _go_struct(type_name: str, value: dict[str, Any]) -> Any:
    inner = ", ".join(f"{k[:1].upper()}{k[1:]}:{fe.render_value(v)}" for k, v in value.items())
    return _GoValue(f"{type_name}{{{inner}}}")


def validate_statefulset(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if old is None:
        errs = meta.validate_object_meta(obj.get("metadata"), True, meta.dns_subdomain_name)
        return errs + validate_spec(obj.get("spec"))
    errs = meta.validate_object_meta_update(obj.get("metadata"), old.get("metadata"))
    errs += validate_spec(obj.get("spec"))
    new_spec = copy.deepcopy(obj.get("spec") or {})
    old_spec = old.get("spec") or {}
    for key in _MUTABLE:
        if key in old_spec:
            new_spec[key] = old_spec[key]
        else:
            new_spec.pop(key, None)
    if not meta.semantic_equal(new_spec, old_spec):
        errs.append(fe.forbidden("spec", FORBIDDEN_UPDATE))
    return errs
