"""KubeDirector's object layout: label keys, container/volume names, init marker, object naming (pkg/executor).

These values are facts about what KubeDirector creates (pkg/executor/types.go, statefulset.go, util.go);
gitops-kd reads and patches those objects, so it must name things exactly as KubeDirector does.
"""

from __future__ import annotations

DOMAIN = "kubedirector.hpe.com"
CLUSTER_LABEL = f"{DOMAIN}/kdcluster"
APP_LABEL = f"{DOMAIN}/kdapp"
APP_CATALOG_LABEL = f"{DOMAIN}/appCatalog"
ROLE_LABEL = f"{DOMAIN}/role"
HEADLESS_LABEL = f"{DOMAIN}/headless"
APP_PRETTY_NAME_ANNOTATION = f"{DOMAIN}/kdapp-prettyName"
FINALIZER = f"{DOMAIN}/cleanup"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
REVISION_LABEL = "controller-revision-hash"

API_GROUP = DOMAIN
API_VERSION = f"{DOMAIN}/v1beta1"
KDCLUSTER_KIND = "KubeDirectorCluster"
KDAPP_KIND = "KubeDirectorApp"
KDCLUSTER_PLURAL = "kubedirectorclusters"
KDAPP_PLURAL = "kubedirectorapps"

APP_CONTAINER = "app"
INIT_CONTAINER = "init"
PVC_TEMPLATE = "p"  # volumeClaimTemplates[0].name; member PVCs are "p-<pod>"
INIT_MOUNT = "/mnt"  # where KD's init container mounts the PVC
STATEFULSET_PREFIX = "kdss-"
HEADLESS_PREFIX = "kdhs-"
MEMBER_SERVICE_PREFIX = "s-"
INIT_MARKER = "/etc/kubedirector.init"  # relative to the PVC root (/mnt in the init container)

NAMING_UID = "UID"
NAMING_CR_NAME_ROLE = "CrNameRole"
CATALOG_LOCAL = "local"
CATALOG_SYSTEM = "system"

# KD truncates CrNameRole prefixes so that prefix + 5-char suffix + member index fit in 63 chars.
NAME_LENGTH_LIMIT = 46

# StatefulSet spec fields the apiserver lets an update change; any other change is refused.
STATEFULSET_MUTABLE_FIELDS = frozenset({
    "replicas", "template", "updateStrategy", "ordinals", "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
})


def mung_object_name(name: str) -> str:
    """KD's MungObjectName: lower-case, '.' and '_' become '-', truncated to 46 characters."""
    out: list[str] = []
    for i, ch in enumerate(name[:NAME_LENGTH_LIMIT]):
        if ch in "._":
            if i != NAME_LENGTH_LIMIT - 1:
                out.append("-")
        else:
            out.append(ch.lower())
    return "".join(out)


def statefulset_generate_name(cluster_name: str, role_id: str, naming_scheme: str) -> str:
    """metadata.generateName of a role's StatefulSet: `kdss-` (UID) or `<cluster>-<role>-` (CrNameRole)."""
    if naming_scheme == NAMING_CR_NAME_ROLE:
        return mung_object_name(f"{cluster_name}-{role_id}") + "-"
    return STATEFULSET_PREFIX


def headless_generate_name(cluster_name: str, naming_scheme: str) -> str:
    """metadata.generateName of the cluster's headless service: `kdhs-` (UID) or the munged cluster name."""
    if naming_scheme == NAMING_CR_NAME_ROLE:
        return mung_object_name(cluster_name)
    return HEADLESS_PREFIX


def member_pod_name(statefulset: str, index: int) -> str:
    """A member's pod name: the StatefulSet's ordinal pod name."""
    return f"{statefulset}-{index}"


def member_pvc_name(pod: str) -> str:
    """The PVC the StatefulSet controller makes for a member from the `p` claim template."""
    return f"{PVC_TEMPLATE}-{pod}"


def member_service_name(pod: str, naming_scheme: str) -> str:
    """A member's own Service: `s-<pod>` (UID) or the pod name itself (CrNameRole)."""
    if naming_scheme == NAMING_CR_NAME_ROLE:
        return pod
    return MEMBER_SERVICE_PREFIX + pod


def service_port_name(service_id: str, url_scheme: str | None) -> str:
    """KD's createPortNameForService: `<scheme>-<id>` (scheme lower-cased) or `generic-<id>`."""
    return f"{url_scheme.lower()}-{service_id}" if url_scheme else f"generic-{service_id}"
