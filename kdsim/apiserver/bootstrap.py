"""Cluster seeding at start: the default namespaces (with their service accounts), a default StorageClass,
KubeDirector's CRDs and any others."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from kdcrds import kubedirector_crds
from kdsim.apiserver.objects import ObjectApi
from kdsim.apiserver.resources import CRD_GROUP, CRD_PLURAL
from kdsim.kubedirector.branch_crds import live_upgrade_crds

log = logging.getLogger(__name__)
NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# A fresh cluster has a default StorageClass, as most real ones do (kind's "standard"): KubeDirector defaults a
# role's storageClassName to it and refuses a KDCluster needing one when there is none.
DEFAULT_STORAGE_CLASS = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
    "provisioner": "kubernetes.io/no-provisioner",
    "reclaimPolicy": "Delete",
    "volumeBindingMode": "Immediate",
}


def seed(api: ObjectApi, extra_crds: Sequence[Mapping[str, Any]] = (), *, live_upgrade: bool = False) -> None:
    """Serve the CRDs already in the store, then create whatever of the initial state is missing.

    The initial state: the default namespaces, KubeDirector's CRDs (its live-app-upgrade branch's with
    ``live_upgrade``) and `extra_crds` (a user's own kinds).
    """
    store, registry = api.store, api.registry
    for crd in store.read_all(CRD_GROUP, CRD_PLURAL):
        registry.set_crd(crd)
    ns_type = registry.lookup("", "v1", "namespaces")
    crd_type = registry.lookup(CRD_GROUP, "v1", CRD_PLURAL)
    sc_type = registry.lookup("storage.k8s.io", "v1", "storageclasses")
    assert ns_type is not None and crd_type is not None and sc_type is not None
    if store.read("", "namespaces", "", NAMESPACES[0]) is None:  # a fresh cluster (not a restart)
        api.create(sc_type, None, dict(DEFAULT_STORAGE_CLASS))
    for name in NAMESPACES:
        if store.read("", "namespaces", "", name) is None:
            api.create(ns_type, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    for crd in [*(live_upgrade_crds() if live_upgrade else kubedirector_crds()), *map(dict, extra_crds)]:
        if store.read(CRD_GROUP, CRD_PLURAL, "", crd["metadata"]["name"]) is None:
            api.create(crd_type, None, crd)
            log.debug("installed CRD %s", crd["metadata"]["name"])
