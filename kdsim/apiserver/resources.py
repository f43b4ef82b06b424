"""Resource types the embedded API server serves: the built-in kinds and the CRD-to-resource mapping."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class PrinterColumn:
    """One CRD additionalPrinterColumns entry (evaluated by the Table printer)."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(frozen=True)
class ResourceType:
    """One served resource (group/version/plural) and what the server knows about it."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()  # "status", "scale", "binding", "exec", "log", "attach", "portforward"
    verbs: tuple[str, ...] = ALL_VERBS
    has_generation: bool = False
    custom: bool = False
    # For custom resources: the openAPIV3Schema of this version (None: no validation) and printer columns.
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    printer_columns: tuple[PrinterColumn, ...] = ()
    storage: bool = True
    # DELETE answers with the deleted object instead of a Status (kube-apiserver's ReturnDeletedObject).
    returns_deleted: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """`statefulsets.apps`, `pods`: how error messages name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def has_status(self) -> bool:
        return "status" in self.subresources


def _t(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool = True,
    *,
    short: tuple[str, ...] = (),
    cats: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
    gen: bool = False,
    verbs: tuple[str, ...] = ALL_VERBS,
    returns_deleted: bool = False,
) -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        namespaced=namespaced,
        short_names=short,
        categories=cats,
        subresources=sub,
        verbs=verbs,
        has_generation=gen,
        returns_deleted=returns_deleted,
    )


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _t(
        "",
        "v1",
        "pods",
        "Pod",
        short=("po",),
        cats=("all",),
        sub=("status", "binding", "exec", "attach", "log", "portforward"),
        returns_deleted=True,
    ),
    _t("", "v1", "services", "Service", short=("svc",), cats=("all",), sub=("status",), returns_deleted=True),
    _t("", "v1", "configmaps", "ConfigMap", short=("cm",)),
    _t("", "v1", "secrets", "Secret"),
    _t("", "v1", "events", "Event", short=("ev",)),
    _t("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", short=("pvc",), sub=("status",), returns_deleted=True),
    _t(
        "",
        "v1",
        "namespaces",
        "Namespace",
        False,
        short=("ns",),
        sub=("status",),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    ),
    _t("", "v1", "nodes", "Node", False, short=("no",), sub=("status",)),
    _t("", "v1", "serviceaccounts", "ServiceAccount", short=("sa",)),
    _t("", "v1", "endpoints", "Endpoints", short=("ep",)),
    _t("apps", "v1", "statefulsets", "StatefulSet", short=("sts",), cats=("all",), sub=("status", "scale"), gen=True),
    _t("apps", "v1", "controllerrevisions", "ControllerRevision"),
    # Served for `kubectl apply` of deploy/ manifests; stored only (no Deployment controller, no RBAC enforcement).
    _t("apps", "v1", "deployments", "Deployment", short=("deploy",), cats=("all",), sub=("status", "scale"), gen=True),
    _t("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    _t("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    _t("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _t("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _t("coordination.k8s.io", "v1", "leases", "Lease"),
    # Stored only (no Ingress controller): the Helm chart's webhook Ingress example applies.
    _t("networking.k8s.io", "v1", "ingresses", "Ingress", short=("ing",), sub=("status",), gen=True),
    # Stored only (no provisioner): KubeDirector reads them to default a role's storageClassName.
    _t("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, short=("sc",)),
    # Answered, never stored (kdsim.apiserver.reviews): `kubectl auth can-i` and `auth can-i --list`.
    _t("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, verbs=("create",)),
    _t("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False, verbs=("create",)),
    # `kubectl auth whoami`: v1 (1.28+ ask first), v1beta1 (1.27 asks first; still served by 1.30)
    _t("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False, verbs=("create",)),
    replace(
        _t("authentication.k8s.io", "v1beta1", "selfsubjectreviews", "SelfSubjectReview", False, verbs=("create",)), storage=False
    ),
    _t("events.k8s.io", "v1", "events", "Event", short=("ev",)),
    _t(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        False,
        cats=("api-extensions",),
        gen=True,
    ),
    # Stored only: the embedded cluster does not evaluate CEL policies.
    _t(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        False,
        cats=("api-extensions",),
        sub=("status",),
        gen=True,
    ),
    _t(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        False,
        cats=("api-extensions",),
        gen=True,
    ),
    _t(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        short=("crd", "crds"),
        cats=("api-extensions",),
        sub=("status",),
        gen=True,
    ),
)

CRD_GROUP = "apiextensions.k8s.io"
CRD_PLURAL = "customresourcedefinitions"


def _printer_columns(raw: list[dict[str, Any]] | None) -> tuple[PrinterColumn, ...]:
    cols = []
    for c in raw or []:
        cols.append(
            PrinterColumn(
                name=str(c.get("name", "")),
                type=str(c.get("type", "string")),
                json_path=str(c.get("jsonPath", "")),
                description=str(c.get("description", "")),
                priority=int(c.get("priority", 0) or 0),
                format=str(c.get("format", "")),
            )
        )
    return tuple(cols)


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """The resource types a CustomResourceDefinition serves (one per served version)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    kind = str(names.get("kind", ""))
    out = []
    for v in spec.get("versions") or []:
        if not v.get("served", True):
            continue
        sub = v.get("subresources") or {}
        subs = tuple(s for s in ("status", "scale") if s in sub)
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        out.append(
            ResourceType(
                group=str(spec.get("group", "")),
                version=str(v.get("name", "")),
                plural=str(names.get("plural", "")),
                singular=str(names.get("singular") or kind.lower()),
                kind=kind,
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=subs,
                has_generation=True,
                custom=True,
                schema=schema,
                printer_columns=_printer_columns(v.get("additionalPrinterColumns")),
                storage=bool(v.get("storage", False)),
            )
        )
    return out
