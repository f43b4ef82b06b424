"""The embedded cluster as gitops-kd's tests use it: kdsim's, with gitops-kd's KDRollout CRD installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitops_kd.crds import KDROLLOUT_CRD, load_crd
from kdsim.cluster import EmbeddedCluster


def embedded_cluster(state_dir: Path | None = None, **options: Any) -> EmbeddedCluster:
    """A not yet started EmbeddedCluster serving KubeDirector's kinds and the KDRollout."""
    return EmbeddedCluster(state_dir, crds=[load_crd(KDROLLOUT_CRD)], **options)
