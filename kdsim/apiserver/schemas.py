"""OpenAPI schemas of the served kinds: built-ins from the official client's models (generated from the real
OpenAPI document: field names, types, descriptions, required), custom resources from their openAPIV3Schema."""

from __future__ import annotations

import copy
import re
import types
import typing
from datetime import date, datetime
from functools import lru_cache
from typing import Any

from kdsim.apiserver.resources import ResourceType
from kdsim.patch import schemas as strategic

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
# The meta/v1 types the built-in kinds reference (the rest live in their kind's API package).
_META_TYPES = {
    "ObjectMeta",
    "ListMeta",
    "LabelSelector",
    "LabelSelectorRequirement",
    "OwnerReference",
    "ManagedFieldsEntry",
    "Condition",
    "Status",
    "StatusDetails",
    "StatusCause",
    "Time",
    "MicroTime",
}
_MODEL_FOR = {("", "Event"): "CoreV1Event", ("events.k8s.io", "Event"): "EventsV1Event"}
_VERSION_PREFIX = re.compile(r"^(V\d+(?:alpha\d+|beta\d+)?|CoreV1|EventsV1|StorageV1|DiscoveryV1)")


def package(group: str, version: str) -> str:
    """The API package real schema names carry: io.k8s.api.apps.v1, io.k8s.api.core.v1, ..."""
    if group == "apiextensions.k8s.io":
        return f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{version}"
    return f"io.k8s.api.{group.split('.')[0] if group else 'core'}.{version}"


def custom_name(rt: ResourceType) -> str:
    """A custom resource's schema name: the reversed group, version, kind (com.hpe.kubedirector.v1beta1.X)."""
    return ".".join([*reversed(rt.group.split(".")), rt.version, rt.kind])


def _model(rt: ResourceType) -> Any:
    import kubernetes.client as k

    return getattr(k, _MODEL_FOR.get((rt.group, rt.kind), f"{rt.version.capitalize()}{rt.kind}"), None)


def _short(cls: Any) -> str:
    return _VERSION_PREFIX.sub("", cls.__name__) or cls.__name__


def _doc(cls: Any) -> str:
    return (cls.__doc__ or "").strip().split("\n\n")[0].strip()


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and hasattr(t, "model_fields")


def _schema_of(t: Any, ref: Any) -> dict[str, Any]:
    """The schema of one annotation (`ref(cls)` names a referenced model)."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is typing.Annotated:
        return _schema_of(args[0], ref)
    if origin in (typing.Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        if len(kinds) == 1:
            return _schema_of(kinds[0], ref)
        bases = {typing.get_args(a)[0] if typing.get_origin(a) is typing.Annotated else a for a in kinds}
        if bases == {int, str}:
            return {"$ref": INT_OR_STRING}
        return {"type": "object"}
    if origin in (list, typing.List):  # noqa: UP006
        return {"type": "array", "items": _schema_of(args[0], ref)}
    if origin in (dict, typing.Dict):  # noqa: UP006
        return {"type": "object", "additionalProperties": _schema_of(args[1], ref)}
    if _is_model(t):
        return {"$ref": ref(t)}
    simple = {
        str: {"type": "string"},
        bool: {"type": "boolean"},
        int: {"type": "integer", "format": "int32"},
        float: {"type": "number", "format": "double"},
        datetime: {"type": "string", "format": "date-time"},
        date: {"type": "string", "format": "date"},
        bytes: {"type": "string", "format": "byte"},
    }
    return dict(simple.get(t, {"type": "object"}))


def _model_schema(cls: Any, ref: Any) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required = []
    for name, field in cls.model_fields.items():
        json_name = field.serialization_alias or field.alias or name
        prop = _schema_of(field.annotation, ref)
        if field.description:
            prop["description"] = field.description
        props[json_name] = prop
        if field.is_required():
            required.append(json_name)
    out: dict[str, Any] = {"description": _doc(cls), "type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


# Where each model lives, found walking from these kinds in this order: a model first reached from a core kind
# is core's (a StatefulSet's pod template is a core PodTemplateSpec), and so on.
_SEEDS = (
    (
        "",
        "v1",
        (
            "Pod",
            "PodTemplate",
            "Service",
            "ConfigMap",
            "Secret",
            "Event",
            "PersistentVolumeClaim",
            "Namespace",
            "Node",
            "ServiceAccount",
            "Endpoints",
        ),
    ),
    ("apps", "v1", ("StatefulSet", "Deployment", "ControllerRevision")),
    ("rbac.authorization.k8s.io", "v1", ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")),
    ("coordination.k8s.io", "v1", ("Lease",)),
    ("events.k8s.io", "v1", ("Event",)),
    ("authorization.k8s.io", "v1", ("SelfSubjectAccessReview", "SelfSubjectRulesReview")),
    ("apiextensions.k8s.io", "v1", ("CustomResourceDefinition",)),
)


def _fields_models(cls: Any) -> list[Any]:
    found: list[Any] = []

    def visit(t: Any) -> None:
        if _is_model(t):
            found.append(t)
        for a in typing.get_args(t):
            visit(a)

    for field in cls.model_fields.values():
        visit(field.annotation)
    return found


@lru_cache(maxsize=1)
def _names() -> dict[Any, str]:
    """model class -> its schema name (io.k8s.api.core.v1.PodSpec, io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta)."""
    import kubernetes.client as k

    names: dict[Any, str] = {}
    for group, version, kinds in _SEEDS:
        home = package(group, version)
        pending = []
        for kind in kinds:
            cls = getattr(k, _MODEL_FOR.get((group, kind), f"V1{kind}"))
            names.setdefault(cls, f"{home}.{kind}")
            pending.append(cls)
        while pending:
            for c in _fields_models(pending.pop()):
                if c not in names:
                    short = _short(c)
                    names[c] = f"{META}.{short}" if short in _META_TYPES else f"{home}.{short}"
                    pending.append(c)
    return names


@lru_cache(maxsize=64)
def _builtin(group: str, version: str, kind: str, model_name: str) -> dict[str, dict[str, Any]]:
    """name -> schema of a built-in kind and every model it references (cached: they never change)."""
    import kubernetes.client as k

    cls = getattr(k, model_name)
    names = _names()
    top = names.get(cls) or f"{package(group, version)}.{kind}"
    out: dict[str, dict[str, Any]] = {}
    pending, seen = [cls], {cls}
    while pending:
        c = pending.pop()
        out[top if c is cls else names.get(c, f"{package(group, version)}.{_short(c)}")] = _model_schema(
            c, lambda m: names.get(m, f"{package(group, version)}.{_short(m)}")
        )
        for m in _fields_models(c):
            if m not in seen:
                seen.add(m)
                pending.append(m)
    out[top]["x-kubernetes-group-version-kind"] = [{"group": group, "version": version, "kind": kind}]
    out[INT_OR_STRING] = {"type": "string", "format": "int-or-string"}
    _patch_extensions(out, top, strategic.schema_for(kind))
    return out


def _patch_extensions(out: dict[str, dict[str, Any]], name: str, meta: strategic.Schema) -> None:
    """x-kubernetes-patch-strategy / -merge-key on the fields the strategic merge patch merges, as in the real
    documents (kubectl builds apply's patch from them when it finds the kind there)."""
    props = (out.get(name) or {}).get("properties") or {}
    for field, (strategy, key, child) in meta.items():
        prop = props.get(field)
        if prop is None:
            continue
        if strategy:
            prop["x-kubernetes-patch-strategy"] = strategy
        if key:
            prop["x-kubernetes-patch-merge-key"] = key
        target = prop.get("$ref") or (prop.get("items") or {}).get("$ref")
        if child and isinstance(target, str):
            _patch_extensions(out, target, child)


def for_type(rt: ResourceType) -> tuple[str, dict[str, dict[str, Any]]]:
    """(the kind's schema name, every schema it needs by name); ("", {}) when nothing is known of the kind."""
    if rt.custom:
        name = custom_name(rt)
        schema: dict[str, Any] = copy.deepcopy(rt.schema) if rt.schema else {"type": "object"}
        props = schema.setdefault("properties", {})
        props["apiVersion"] = {"type": "string", "description": _API_VERSION}
        props["kind"] = {"type": "string", "description": _KIND}
        props["metadata"] = {"$ref": f"{META}.ObjectMeta", "description": _METADATA}
        schema["x-kubernetes-group-version-kind"] = [{"group": rt.group, "version": rt.version, "kind": rt.kind}]
        meta = _builtin("", "v1", "ConfigMap", "V1ConfigMap")
        out = {n: s for n, s in meta.items() if n.startswith(META)}
        out[name] = schema
        return name, out
    model = _model(rt)
    if model is None:
        return "", {}
    return f"{package(rt.group, rt.version)}.{rt.kind}", _builtin(rt.group, rt.version, rt.kind, model.__name__)


_API_VERSION = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should convert "
    "recognized schemas to the latest internal value, and may reject unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND = (
    "Kind is a string value representing the REST resource this object represents. Servers may infer this "
    "from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
_METADATA = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def with_refs(schemas: dict[str, dict[str, Any]], prefix: str, wrap: bool) -> dict[str, dict[str, Any]]:
    """The schemas with each `$ref` made a JSON pointer under `prefix` (#/components/schemas/ for v3,
    #/definitions/ for v2); `wrap` puts a property's ref in allOf beside its description, as v3 documents do."""

    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: fix(v) for k, v in node.items()}
            if isinstance(out.get("$ref"), str) and not out["$ref"].startswith("#"):
                target = prefix + out["$ref"]
                if wrap and len(out) > 1:
                    out.pop("$ref")
                    out["allOf"] = [{"$ref": target}]
                else:
                    out["$ref"] = target
            return out
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    return {name: fix(schema) for name, schema in schemas.items()}
