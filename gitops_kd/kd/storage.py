"""KubeDirector's StorageClass rule for a KDCluster (pkg/validator/cluster.go validateRoleStorageClass), pure.

A role with `storage` and no `storageClassName` gets the KubeDirectorConfig's class, else the cluster's default
StorageClass (pkg/observer/observer.go GetDefaultStorageClass: the first class annotated is-default-class "true",
GA or beta annotation); with neither KubeDirector refuses the whole KDCluster with NO_DEFAULT_STORAGE_CLASS.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gitops_kd.constants import DEFAULT_STORAGE_CLASS_ANNOTATION

NO_DEFAULT_STORAGE_CLASS = (
    "storageClassName is not specified for one or more roles, and no default storage class "
    "is available."
)  # pkg/validator/types.go noDefaultStorageClass
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class")


def roles_without_class(spec: Mapping[str, Any]) -> list[tuple[int, str]]:
    """(index, role id) of every role of a KDCluster spec with storage but no storageClassName."""
    out: list[tuple[int, str]] = []
    for i, role in enumerate(spec.get("roles") or ()):
        storage = role.get("storage") if isinstance(role, Mapping) else None
        if isinstance(storage, Mapping) and storage.get("storageClassName") is None:
            out.append((i, str(role.get("id"))))
    return out


def default_class(classes: Iterable[Mapping[str, Any]]) -> str | None:
    """The name of the default StorageClass among ``classes`` (as KubeDirector finds it), None without one."""
    for sc in classes:
        meta = sc.get("metadata") or {}
        if any((meta.get("annotations") or {}).get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS):
            return str(meta.get("name", ""))
    return None


def storage_class_reason(role: str) -> str:
    """Why `gitops-kd validate` refuses a role's storage without storageClassName (KD's own words included)."""
    return (
        f'role "{role}" has storage but no storageClassName: KubeDirector then needs a default StorageClass in '
        f'the cluster and refuses the KubeDirectorCluster without one ("{NO_DEFAULT_STORAGE_CLASS}"); name the '
        f'class, or annotate the KDCluster {DEFAULT_STORAGE_CLASS_ANNOTATION}: "true" (or pass '
        "--default-storage-class) when the target cluster has a default one"
    )


def relies_on_default_class(body: Mapping[str, Any]) -> bool:
    """True when a KDCluster document says its roles rely on the cluster's default StorageClass."""
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(DEFAULT_STORAGE_CLASS_ANNOTATION, "")).lower() == "true"
