"""Which KubeDirector is installed, told from its CRDs' schemas, and what each flavour lets gitops-kd do (pure).

Stock KubeDirector (bluek8s master) and its live-app-upgrade branch serve the same API group and kinds; the
branch's CRDs add `spec.upgradable` to KubeDirectorApp and `status.upgradeInfo` to KubeDirectorCluster
(deploy/kubedirector/*_crd.yaml of each tree). The branch's KDApp schema also prunes unknown fields, so a
`spec.upgrade` sent with the KDApp is silently dropped: gitops-kd keeps its stanza in an annotation on every
flavour (UPGRADE_ANNOTATION).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

STOCK = "stock"
LIVE_UPGRADE = "live-app-upgrade"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Flavour:
    """The installed KubeDirector as its CRDs show it: ``name`` (stock | live-app-upgrade | unknown) and why."""

    name: str
    evidence: str

    def describe(self) -> str:
        what = {
            STOCK: "stock KubeDirector: KDApps clusters use are held; upgrades run at the StatefulSet level",
            LIVE_UPGRADE: "KubeDirector's live-app-upgrade branch: a Git change of a cluster's spec.app to "
            "another KDApp upgrades by its native switch; a KDApp version edit as on stock",
            UNKNOWN: "KubeDirector not identified: gitops-kd upgrades as on stock",
        }[self.name]
        return f"{what} ({self.evidence})"


def _schema(crd: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The openAPIV3Schema of the CRD's storage version (else its first version)."""
    versions = list(((crd or {}).get("spec") or {}).get("versions") or ())
    chosen = next((v for v in versions if v.get("storage")), versions[0] if versions else {})
    return ((chosen.get("schema") or {}).get("openAPIV3Schema")) or {}


def _has(schema: Mapping[str, Any], *path: str) -> bool:
    node: Mapping[str, Any] = schema
    for key in path:
        node = (node.get("properties") or {}).get(key) or {}
        if not node:
            return False
    return True


def flavour_of(app_crd: Mapping[str, Any] | None, cluster_crd: Mapping[str, Any] | None) -> Flavour:
    """The flavour the KDApp and KDCluster CRDs (as the API server serves them; None when unreadable) show."""
    if app_crd is None or cluster_crd is None:
        return Flavour(UNKNOWN, "KubeDirector's CRDs could not be read")
    found = [
        what
        for what, yes in (
            ("KubeDirectorApp spec.upgradable", _has(_schema(app_crd), "spec", "upgradable")),
            ("KubeDirectorCluster status.upgradeInfo", _has(_schema(cluster_crd), "status", "upgradeInfo")),
        )
        if yes
    ]
    if found:
        return Flavour(LIVE_UPGRADE, "CRD schema has " + " and ".join(found))
    return Flavour(STOCK, "CRD schema has neither KubeDirectorApp spec.upgradable nor KubeDirectorCluster status.upgradeInfo")


__all__ = ["LIVE_UPGRADE", "STOCK", "UNKNOWN", "Flavour", "flavour_of"]
