"""Before creating a KDCluster: KubeDirector's StorageClass rule checked online (kd/storage.py), so a cluster KD
would refuse for want of a default StorageClass is refused with KD's reason before anything is written."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from gitops_kd.execute.context import ExecContext
from gitops_kd.kd.storage import NO_DEFAULT_STORAGE_CLASS, default_class, roles_without_class

STORAGE_API, STORAGE_CLASSES = "storage.k8s.io/v1", "storageclasses"


def refusal(ctx: ExecContext, manifest: Mapping[str, Any]) -> str | None:
    """KD's reason when ``manifest`` has a role's storage without storageClassName and the cluster has no default
    StorageClass; None when KD would accept it (or the classes cannot be read: KD's webhook decides then)."""
    if not roles_without_class(manifest.get("spec") or {}):
        return None
    try:
        classes = ctx.rest.list(STORAGE_API, STORAGE_CLASSES).get("items") or []
    except ApiException as exc:
        if exc.status in (403, 404):
            return None
        raise
    return None if default_class(classes) is not None else NO_DEFAULT_STORAGE_CLASS
