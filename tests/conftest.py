"""Shared pytest fixtures: the KubeDirector example data that travels with the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KD_DATA = Path(__file__).resolve().parent / "data" / "kubedirector"


@pytest.fixture(scope="session")
def kd_shared() -> Path:
    """The folder with KubeDirector's example catalog (KDApps) and example clusters (KDClusters)."""
    return KD_DATA
