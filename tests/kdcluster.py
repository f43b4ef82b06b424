"""The embedded cluster as gitops-kd's tests use it: kdsim's, with gitops-kd's own CRDs installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitops_kd.crds import gitops_kd_crds
from kdsim.cluster import EmbeddedCluster


def embedded_cluster(state_dir: Path | None = None, **options: Any) -> EmbeddedCluster:
    """A not yet started EmbeddedCluster serving KubeDirector's kinds and gitops-kd's own."""
    return EmbeddedCluster(state_dir, crds=gitops_kd_crds(), **options)
