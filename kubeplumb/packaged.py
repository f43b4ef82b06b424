"""Read a YAML document shipped inside a Python package (a CRD, a manifest) as a dict."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml


def load_yaml(package: str, filename: str) -> dict[str, Any]:
    """The one YAML mapping in `filename` of `package`; ValueError when the file holds something else."""
    doc = yaml.safe_load(resources.files(package).joinpath(filename).read_text(encoding="utf-8"))
    if not isinstance(doc, dict):
        raise ValueError(f"{package}/{filename}: not a YAML mapping")
    return doc
