"""Shared pytest fixtures: paths to the shared KubeDirector examples."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _shared_kubedirector() -> Path:
    for candidate in (ROOT.parent / "shared" / "kubedirector", ROOT / "shared" / "kubedirector"):
        if candidate.is_dir():
            return candidate
    raise RuntimeError("shared/kubedirector not found beside the repository")


@pytest.fixture(scope="session")
def kd_shared() -> Path:
    """The folder with KubeDirector's CRDs, example catalog and example clusters."""
    return _shared_kubedirector()
