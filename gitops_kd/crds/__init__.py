"""Packaged CustomResourceDefinitions: KubeDirector's (read by the spec model) and gitops-kd's own."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

KDAPP_CRD = "kubedirector.hpe.com_kubedirectorapps_crd.yaml"
KDCLUSTER_CRD = "kubedirector.hpe.com_kubedirectorclusters_crd.yaml"
KDROLLOUT_CRD = "kdrollout.yaml"
SOURCE_CRD = "gitopskdsource.yaml"


def load_crd(filename: str) -> dict[str, Any]:
    """Return one packaged CRD document as a dict."""
    text = resources.files(__name__).joinpath(filename).read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    if not isinstance(doc, dict):
        raise ValueError(f"{filename}: not a CRD document")
    return doc


def gitops_kd_crds() -> list[dict[str, Any]]:
    """gitops-kd's own CRDs, KDRollout and GitOpsKDSource (what `kubectl apply -k deploy/` installs)."""
    return [load_crd(KDROLLOUT_CRD), load_crd(SOURCE_CRD)]
