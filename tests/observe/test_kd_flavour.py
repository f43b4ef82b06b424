"""gitops_kd.kd.flavour: which KubeDirector the CRDs show (stock master, its live-app-upgrade branch, unknown)."""

from __future__ import annotations

import copy
from importlib import resources
from typing import Any

import yaml

from gitops_kd.kd.flavour import LIVE_UPGRADE, STOCK, UNKNOWN, flavour_of


def _crd(name: str) -> dict[str, Any]:
    """KubeDirector master's CRD as packaged (kdcrds: deploy/kubedirector of bluek8s/kubedirector)."""
    text = resources.files("kdcrds").joinpath(f"kubedirector.hpe.com_{name}_crd.yaml").read_text()
    return next(d for d in yaml.safe_load_all(text) if d)


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    return version["schema"]["openAPIV3Schema"]


def test_masters_crds_are_stock() -> None:
    found = flavour_of(_crd("kubedirectorapps"), _crd("kubedirectorclusters"))
    assert found.name == STOCK and "neither" in found.evidence


def test_the_branchs_schema_fields_tell_the_live_upgrade_branch() -> None:
    """The branch's CRDs (7ba1ec2 deploy/kubedirector): KDApp spec.upgradable, KDCluster status.upgradeInfo."""
    app, cluster = _crd("kubedirectorapps"), copy.deepcopy(_crd("kubedirectorclusters"))
    app_branch = copy.deepcopy(app)
    _schema(app_branch)["properties"]["spec"].setdefault("properties", {})["upgradable"] = {"type": "boolean"}
    assert flavour_of(app_branch, cluster).name == LIVE_UPGRADE
    _schema(cluster)["properties"].setdefault("status", {}).setdefault("properties", {})["upgradeInfo"] = {"type": "object"}
    found = flavour_of(app, cluster)
    assert found.name == LIVE_UPGRADE and "KubeDirectorCluster status.upgradeInfo" in found.evidence


def test_unreadable_crds_are_unknown() -> None:
    assert flavour_of(None, _crd("kubedirectorclusters")).name == UNKNOWN
