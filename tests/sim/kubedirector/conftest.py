"""Fixtures for the simulated KubeDirector tests: the shared example apps and clusters as dicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml


def load_doc(path: Path) -> dict[str, Any]:
    """One KDApp/KDCluster document (JSON or YAML, comments allowed) from the shared examples."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    docs = [d for d in yaml.safe_load_all(text) if d]
    return docs[0]


@pytest.fixture(scope="session")
def shared_apps(kd_shared: Path) -> dict[str, dict[str, Any]]:
    """Every example KDApp, by name, in namespace default."""
    apps = {}
    for path in sorted((kd_shared / "catalog").iterdir()):
        doc = load_doc(path)
        doc["metadata"]["namespace"] = "default"
        apps[doc["metadata"]["name"]] = doc
    return apps


@pytest.fixture(scope="session")
def shared_clusters(kd_shared: Path) -> dict[str, dict[str, Any]]:
    """Every example KDCluster, by name, in namespace default."""
    clusters = {}
    for path in sorted((kd_shared / "clusters").iterdir()):
        doc = load_doc(path)
        doc["metadata"]["namespace"] = "default"
        doc["metadata"]["uid"] = "uid-" + doc["metadata"]["name"]
        clusters[doc["metadata"]["name"]] = doc
    return clusters
