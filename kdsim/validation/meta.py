"""ObjectMeta, label/annotation, selector and generic field checks shared by every kind (apimachinery wording)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kdsim import namerules
from kubeplumb import fielderrors as fe
from kubeplumb.fielderrors import FieldError

NameFn = Callable[[str, bool], list[str]]
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
IS_NEGATIVE = "must be greater than or equal to 0"
IMMUTABLE = "field is immutable"

CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "StorageClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "PriorityClass",
        "APIService",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "CSIDriver",
        "CSINode",
        "VolumeAttachment",
        "RuntimeClass",
        "IngressClass",
    }
)


def _mask_trailing_dash(name: str) -> str:
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


def dns_subdomain_name(name: str, prefix: bool) -> list[str]:
    """NameIsDNSSubdomain."""
    return namerules.is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def dns_label_name(name: str, prefix: bool) -> list[str]:
    """NameIsDNSLabel."""
    return namerules.is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def dns1035_label_name(name: str, prefix: bool) -> list[str]:
    """NameIsDNS1035Label (Service names)."""
    return namerules.is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(labels, dict):
        return errs
    for key in sorted(labels):
        errs.extend(fe.invalid(path, key, m) for m in namerules.is_qualified_name(key))
        value = labels[key]
        if not isinstance(value, str):
            errs.append(fe.invalid(fe.key(path, key), value, "must be a string"))
            continue
        errs.extend(fe.invalid(path, value, m) for m in namerules.is_valid_label_value(value))
    return errs


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(annotations, dict):
        return errs
    for key in sorted(annotations):
        errs.extend(fe.invalid(path, key, m) for m in namerules.is_qualified_name(key.lower()))
    size = sum(len(k) + len(str(v)) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(fe.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def validate_owner_references(refs: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    controllers: list[str] = []
    for ref in refs or []:
        if not isinstance(ref, dict):
            continue
        if not ref.get("apiVersion"):
            errs.append(fe.invalid(fe.child(path, "apiVersion"), ref.get("apiVersion", ""), "version must not be empty"))
        if not ref.get("kind"):
            errs.append(fe.invalid(fe.child(path, "kind"), ref.get("kind", ""), "kind must not be empty"))
        if not ref.get("name"):
            errs.append(fe.invalid(fe.child(path, "name"), ref.get("name", ""), "name must not be empty"))
        if not ref.get("uid"):
            errs.append(fe.invalid(fe.child(path, "uid"), ref.get("uid", ""), "uid must not be empty"))
        if ref.get("controller"):
            controllers.append(f"{ref.get('kind', '')}/{ref.get('name', '')}")
    if len(controllers) > 1:
        errs.append(
            fe.invalid(
                path,
                refs,
                f'Only one reference can have Controller set to true. Found "true" in references for {" and ".join(controllers)}',
            )
        )
    return errs


def validate_finalizers(finalizers: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for f in finalizers or []:
        errs.extend(fe.invalid(path, f, m) for m in namerules.is_qualified_name(str(f)))
    if "orphan" in (finalizers or []) and "foregroundDeletion" in (finalizers or []):
        errs.append(fe.invalid(path, [str(f) for f in finalizers], "finalizer orphan and foregroundDeletion cannot be both set"))
    return errs


def validate_object_meta(meta: Any, namespaced: bool, name_fn: NameFn, path: str = "metadata") -> list[FieldError]:
    """ValidateObjectMeta."""
    meta = meta if isinstance(meta, dict) else {}
    errs: list[FieldError] = []
    generate = meta.get("generateName") or ""
    if generate:
        errs.extend(fe.invalid(fe.child(path, "generateName"), generate, m) for m in name_fn(generate, True))
    name = meta.get("name") or ""
    if not name:
        errs.append(fe.required(fe.child(path, "name"), "name or generateName is required"))
    else:
        errs.extend(fe.invalid(fe.child(path, "name"), name, m) for m in name_fn(name, False))
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            errs.append(fe.required(fe.child(path, "namespace"), ""))
        else:
            errs.extend(fe.invalid(fe.child(path, "namespace"), namespace, m) for m in namerules.is_dns1123_label(namespace))
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:
        errs.append(fe.invalid(fe.child(path, "generation"), generation, IS_NEGATIVE))
    errs.extend(validate_labels(meta.get("labels"), fe.child(path, "labels")))
    errs.extend(validate_annotations(meta.get("annotations"), fe.child(path, "annotations")))
    errs.extend(validate_owner_references(meta.get("ownerReferences"), fe.child(path, "ownerReferences")))
    errs.extend(validate_finalizers(meta.get("finalizers"), fe.child(path, "finalizers")))
    return errs


def validate_object_meta_update(new: Any, old: Any, path: str = "metadata") -> list[FieldError]:
    """ValidateObjectMetaUpdate (immutable identity fields)."""
    new = new if isinstance(new, dict) else {}
    old = old if isinstance(old, dict) else {}
    errs: list[FieldError] = []
    for key in ("name", "namespace", "uid", "creationTimestamp"):
        errs.extend(immutable(new.get(key, ""), old.get(key, ""), fe.child(path, key)))
    generation = new.get("generation")
    if isinstance(generation, int) and generation < 0:
        errs.append(fe.invalid(fe.child(path, "generation"), generation, IS_NEGATIVE))
    errs.extend(validate_labels(new.get("labels"), fe.child(path, "labels")))
    errs.extend(validate_annotations(new.get("annotations"), fe.child(path, "annotations")))
    errs.extend(validate_owner_references(new.get("ownerReferences"), fe.child(path, "ownerReferences")))
    errs.extend(validate_finalizers(new.get("finalizers"), fe.child(path, "finalizers")))
    return errs


def immutable(new: Any, old: Any, path: str) -> list[FieldError]:
    """ValidateImmutableField."""
    if _canonical(new) == _canonical(old):
        return []
    return [fe.invalid(path, new, IMMUTABLE)]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def semantic_equal(a: Any, b: Any) -> bool:
    """apiequality.Semantic.DeepEqual on decoded JSON (empty and absent collections compare equal)."""
    return _canonical(_drop_empty(a)) == _canonical(_drop_empty(b))


def _drop_empty(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _drop_empty(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_drop_empty(v) for v in value]
    return value


def nonnegative(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return [fe.invalid(path, value, IS_NEGATIVE)]
    return []


def validate_label_selector(selector: Any, path: str) -> list[FieldError]:
    """metav1validation.ValidateLabelSelector."""
    errs: list[FieldError] = []
    if not isinstance(selector, dict):
        return errs
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        p = fe.index(fe.child(path, "matchExpressions"), i)
        op = expr.get("operator", "")
        values = expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errs.append(fe.required(fe.child(p, "values"), "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    fe.forbidden(fe.child(p, "values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
                )
        else:
            errs.append(fe.invalid(fe.child(p, "operator"), op, "not a valid selector operator"))
        key = str(expr.get("key", ""))
        errs.extend(fe.invalid(fe.child(p, "key"), key, m) for m in namerules.is_qualified_name(key))
        for j, v in enumerate(values):
            errs.extend(fe.invalid(fe.index(fe.child(p, "values"), j), v, m) for m in namerules.is_valid_label_value(str(v)))
    errs.extend(validate_labels(selector.get("matchLabels"), fe.child(path, "matchLabels")))
    return errs
