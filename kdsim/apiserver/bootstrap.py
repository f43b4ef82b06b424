"""Cluster seeding at start: the default namespaces (with their service accounts), KubeDirector's CRDs and any others."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from kdsim.apiserver.objects import ObjectApi
from kdsim.apiserver.resources import CRD_GROUP, CRD_PLURAL
from kdsim.crds import kubedirector_crds

log = logging.getLogger(__name__)
NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def seed(api: ObjectApi, extra_crds: Sequence[Mapping[str, Any]] = ()) -> None:
    """Serve the CRDs already in the store, then create whatever of the initial state is missing.

    The initial state: the default namespaces, KubeDirector's CRDs and `extra_crds` (a user's own kinds).
    """
    store, registry = api.store, api.registry
    for crd in store.read_all(CRD_GROUP, CRD_PLURAL):
        registry.set_crd(crd)
    ns_type = registry.lookup("", "v1", "namespaces")
    crd_type = registry.lookup(CRD_GROUP, "v1", CRD_PLURAL)
    assert ns_type is not None and crd_type is not None
    for name in NAMESPACES:
        if store.read("", "namespaces", "", name) is None:
            api.create(ns_type, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    for crd in [*kubedirector_crds(), *map(dict, extra_crds)]:
        if store.read(CRD_GROUP, CRD_PLURAL, "", crd["metadata"]["name"]) is None:
            api.create(crd_type, None, crd)
            log.debug("installed CRD %s", crd["metadata"]["name"])
