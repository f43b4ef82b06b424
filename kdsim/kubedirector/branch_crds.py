"""KubeDirector's two CRDs as its live-app-upgrade branch serves them (the branch's deploy/kubedirector/*_crd.yaml)."""

from __future__ import annotations

from typing import Any

from kdcrds import kubedirector_crds


def live_upgrade_crds() -> list[dict[str, Any]]:
    """Stock's two CRDs plus KDApp `spec.upgradable`, KDCluster `status.app`, `status.upgradeInfo` and the roles'
    and members' upgrade status (what a client tells the branch by, and what its controller writes)."""
    app, cluster = kubedirector_crds()
    for crd in (app, cluster):
        for version in crd["spec"]["versions"]:
            root = version["schema"]["openAPIV3Schema"]["properties"]
            if crd is app:
                root["spec"]["properties"]["upgradable"] = {"type": "boolean"}
                continue
            status = root["status"]["properties"]
            status["app"] = {"type": "string", "minLength": 1}
            status["upgradeInfo"] = {
                "type": "object",
                "nullable": True,
                "properties": {"isRollingBack": {"type": "boolean"}, "prevApp": {"type": "string"}},
            }
            role = status["roles"]["items"]["properties"]
            role["roleUpgradeStatus"] = {"type": "string"}
            role["members"]["items"]["properties"]["podUpgradeStatus"] = {"type": "string"}
    return [app, cluster]


__all__ = ["live_upgrade_crds"]
