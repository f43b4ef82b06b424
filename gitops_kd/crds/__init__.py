"""gitops-kd's own packaged CustomResourceDefinitions, KDRollout and GitOpsKDSource (KubeDirector's are in kdcrds)."""

from __future__ import annotations

from typing import Any

from kubeplumb.packaged import load_yaml

KDROLLOUT_CRD = "kdrollout.yaml"
SOURCE_CRD = "gitopskdsource.yaml"


def load_crd(filename: str) -> dict[str, Any]:
    """One of gitops-kd's CRDs (KDROLLOUT_CRD, SOURCE_CRD) as a dict."""
    return load_yaml(__name__, filename)


def gitops_kd_crds() -> list[dict[str, Any]]:
    """gitops-kd's own CRDs, KDRollout and GitOpsKDSource (what `kubectl apply -k deploy/` installs)."""
    return [load_crd(KDROLLOUT_CRD), load_crd(SOURCE_CRD)]
