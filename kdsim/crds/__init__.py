"""KubeDirector's CustomResourceDefinitions, packaged so the embedded cluster can serve its kinds."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

FILES = ("kubedirector.hpe.com_kubedirectorapps_crd.yaml", "kubedirector.hpe.com_kubedirectorclusters_crd.yaml")


def kubedirector_crds() -> list[dict[str, Any]]:
    """KubeDirector's two CRDs as dicts."""
    return [yaml.safe_load(resources.files(__name__).joinpath(f).read_text(encoding="utf-8")) for f in FILES]


def live_upgrade_crds() -> list[dict[str, Any]]:
    """The two CRDs as KubeDirector's live-app-upgrade branch serves them (its deploy/kubedirector/*_crd.yaml):
    stock's plus KDApp `spec.upgradable`, KDCluster `status.app`, `status.upgradeInfo` and the roles' and members'
    upgrade status (what a client tells the branch by, and what its controller writes)."""
    app, cluster = kubedirector_crds()
    for crd in (app, cluster):
        for version in crd["spec"]["versions"]:
            root = version["schema"]["openAPIV3Schema"]["properties"]
            if crd is app:
                root["spec"]["properties"]["upgradable"] = {"type": "boolean"}
                continue
            status = root["status"]["properties"]
            status["app"] = {"type": "string", "minLength": 1}
            status["upgradeInfo"] = {"type": "object", "nullable": True, "properties": {
                "isRollingBack": {"type": "boolean"}, "prevApp": {"type": "string"}}}
            role = status["roles"]["items"]["properties"]
            role["roleUpgradeStatus"] = {"type": "string"}
            role["members"]["items"]["properties"]["podUpgradeStatus"] = {"type": "string"}
    return [app, cluster]
