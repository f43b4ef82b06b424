"""KubeDirector's object layout: label keys, container/volume names, init marker, object naming (pkg/executor).

These values are facts about what KubeDirector creates (pkg/executor/types.go, statefulset.go, util.go);
gitops-kd reads and patches those objects, so it must name things exactly as KubeDirector does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.spec.kinds import API_GROUP as API_GROUP  # re-exported: the kinds are the spec's, read here too
from gitops_kd.spec.kinds import API_VERSION as API_VERSION
from gitops_kd.spec.kinds import KDAPP_KIND as KDAPP_KIND
from gitops_kd.spec.kinds import KDCLUSTER_KIND as KDCLUSTER_KIND

DOMAIN = API_GROUP
CLUSTER_LABEL = f"{DOMAIN}/kdcluster"
APP_LABEL = f"{DOMAIN}/kdapp"
APP_CATALOG_LABEL = f"{DOMAIN}/appCatalog"
ROLE_LABEL = f"{DOMAIN}/role"
HEADLESS_LABEL = f"{DOMAIN}/headless"
APP_PRETTY_NAME_ANNOTATION = f"{DOMAIN}/kdapp-prettyName"
FINALIZER = f"{DOMAIN}/cleanup"
REVISION_LABEL = "controller-revision-hash"
KD_LABELS = (CLUSTER_LABEL, ROLE_LABEL)
"""KubeDirector's labels naming a role object's KDCluster and role (on its StatefulSets, pods and Services)."""

CONFIGURED = "configured"  # a KubeDirectorCluster's status.state once KubeDirector settled it; a member's once ready
# KubeDirector's other cluster states and the member states that count (pkg/controller/kubedirectorcluster/types.go)
CREATING, UPDATING, SPEC_MODIFIED = "creating", "updating", "spec modified"
MEMBER_CONFIG_ERROR = "config error"
MEMBER_LEAVING = ("delete pending", "deleting")  # members on their way out (not counted against readiness)
DOWN_CONTAINER_STATES = ("terminated", "unresponsive", "absent")  # a member's stateDetail.lastKnownContainerState
STATEFULSET_KIND = "StatefulSet"  # a role's StatefulSet
SERVICE_KIND = "Service"  # a member's (or the cluster's headless) Service
KDCLUSTER_PLURAL = "kubedirectorclusters"
KDAPP_PLURAL = "kubedirectorapps"

APP_CONTAINER = "app"
INIT_CONTAINER = "init"
PVC_TEMPLATE = "p"  # volumeClaimTemplates[0].name; member PVCs are "p-<pod>"
INIT_MOUNT = "/mnt"  # where KD's init container mounts the PVC
INIT_MARKER = "/etc/kubedirector.init"  # relative to the PVC root (/mnt in the init container)

CATALOG_LOCAL = "local"
CATALOG_SYSTEM = "system"

# StatefulSet spec fields the apiserver lets an update change; any other change is refused.
STATEFULSET_MUTABLE_FIELDS = frozenset(
    {
        "replicas",
        "template",
        "updateStrategy",
        "ordinals",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    }
)


def controller_cluster(meta: Mapping[str, Any]) -> str:
    """The KDCluster named by an object's controller ownerReference to a KDCluster (KubeDirector sets one on
    every StatefulSet and Service it makes: shared.OwnerReferences), "" when it has none."""
    return next(
        (
            str(r.get("name") or "")
            for r in meta.get("ownerReferences") or ()
            if r.get("controller") and r.get("kind") == KDCLUSTER_KIND
        ),
        "",
    )


def member_pod_name(statefulset: str, index: int) -> str:
    """A member's pod name: the StatefulSet's ordinal pod name."""
    return f"{statefulset}-{index}"


def service_port_name(service_id: str, url_scheme: str | None) -> str:
    """KD's createPortNameForService: `<scheme>-<id>` (scheme lower-cased) or `generic-<id>`."""
    return f"{url_scheme.lower()}-{service_id}" if url_scheme else f"generic-{service_id}"
