"""KubeDirector's CustomResourceDefinitions, packaged so the embedded cluster can serve its kinds."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

FILES = ("kubedirector.hpe.com_kubedirectorapps_crd.yaml", "kubedirector.hpe.com_kubedirectorclusters_crd.yaml")


def kubedirector_crds() -> list[dict[str, Any]]:
    """KubeDirector's two CRDs as dicts."""
    return [yaml.safe_load(resources.files(__name__).joinpath(f).read_text(encoding="utf-8")) for f in FILES]
