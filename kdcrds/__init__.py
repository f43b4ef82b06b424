"""KubeDirector's CustomResourceDefinitions, verbatim from its repository: the one copy gitops_kd and kdsim load."""

from __future__ import annotations

from typing import Any

from kubeplumb.packaged import load_yaml

KDAPP_CRD = "kubedirector.hpe.com_kubedirectorapps_crd.yaml"
KDCLUSTER_CRD = "kubedirector.hpe.com_kubedirectorclusters_crd.yaml"


def kubedirector_crd(filename: str) -> dict[str, Any]:
    """One of KubeDirector's CRDs (KDAPP_CRD, KDCLUSTER_CRD) as a dict."""
    return load_yaml(__name__, filename)


def kubedirector_crds() -> list[dict[str, Any]]:
    """KubeDirector's two CRDs as dicts (what installing KubeDirector creates)."""
    return [kubedirector_crd(KDAPP_CRD), kubedirector_crd(KDCLUSTER_CRD)]
