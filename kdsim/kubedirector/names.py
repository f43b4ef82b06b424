"""KubeDirector's label keys, object-name prefixes and naming rules, as the simulated KubeDirector uses them.

Facts about what KubeDirector itself creates (bluek8s/kubedirector: pkg/executor/types.go, statefulset.go,
service.go, util.go; pkg/shared/types.go), stated here on their own: the emulator depends on nothing
of the controller it is used to test.
"""

from __future__ import annotations

DOMAIN = "kubedirector.hpe.com"
API_GROUP = DOMAIN
API_VERSION = f"{DOMAIN}/v1beta1"
KDCLUSTER_KIND = "KubeDirectorCluster"
KDAPP_PLURAL = "kubedirectorapps"
KDCLUSTER_PLURAL = "kubedirectorclusters"

CLUSTER_LABEL = f"{DOMAIN}/kdcluster"
APP_LABEL = f"{DOMAIN}/kdapp"
APP_CATALOG_LABEL = f"{DOMAIN}/appCatalog"
ROLE_LABEL = f"{DOMAIN}/role"
HEADLESS_LABEL = f"{DOMAIN}/headless"
APP_PRETTY_NAME_ANNOTATION = f"{DOMAIN}/kdapp-prettyName"
FINALIZER = f"{DOMAIN}/cleanup"

APP_CONTAINER = "app"
INIT_CONTAINER = "init"
PVC_TEMPLATE = "p"  # the StatefulSet's one volumeClaimTemplate; member PVCs are "p-<pod>"
INIT_MARKER = "/etc/kubedirector.init"  # relative to the PVC root (mounted at /mnt in the init container)
STATEFULSET_PREFIX = "kdss-"
HEADLESS_PREFIX = "kdhs-"
SYSTEM_NAMESPACE = "kubedirector"  # where "system" catalog apps live (KD's own namespace)
MEMBER_SERVICE_PREFIX = "s-"

NAMING_UID = "UID"
NAMING_CR_NAME_ROLE = "CrNameRole"
CATALOG_LOCAL = "local"
CATALOG_SYSTEM = "system"

# KubeDirector's built-in defaults when no KubeDirectorConfig overrides them (pkg/shared/types.go).
DEFAULT_SERVICE_TYPE = "LoadBalancer"  # DefaultServiceType
DEFAULT_NAMING_SCHEME = NAMING_UID  # DefaultNamingScheme
DEFAULT_MAX_LOG_SIZE_DUMP = 256  # DefaultMaxLogSizeDump

# MungObjectName truncates so that a CrNameRole prefix + 5-char suffix + member index fit in 63 chars.
NAME_LENGTH_LIMIT = 46


def mung_object_name(name: str) -> str:
    """KD's MungObjectName: lower-case, '.' and '_' become '-' (dropped in the last place), at most 46 chars."""
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
