"""KubeDirector's label keys, object-name prefixes and naming rules, as the simulated KubeDirector uses them.

The facts live in `gitops_kd.kd.layout` (the controller relies on the same ones); this module re-exports
them so the simulator and the controller can never disagree.
"""

from __future__ import annotations

from gitops_kd.kd.layout import (  # noqa: F401  (re-exported)
    API_GROUP,
    API_VERSION,
    APP_CATALOG_LABEL,
    APP_CONTAINER,
    APP_LABEL,
    APP_PRETTY_NAME_ANNOTATION,
    CATALOG_LOCAL,
    CATALOG_SYSTEM,
    CLUSTER_LABEL,
    DOMAIN,
    FINALIZER,
    HEADLESS_LABEL,
    HEADLESS_PREFIX,
    INIT_CONTAINER,
    INIT_MARKER,
    KDAPP_PLURAL,
    KDCLUSTER_KIND,
    KDCLUSTER_PLURAL,
    MEMBER_SERVICE_PREFIX,
    NAME_LENGTH_LIMIT,
    NAMING_CR_NAME_ROLE,
    NAMING_UID,
    POD_NAME_LABEL,
    PVC_TEMPLATE,
    ROLE_LABEL,
    STATEFULSET_PREFIX,
    headless_generate_name,
    member_pod_name,
    member_pvc_name,
    member_service_name,
    mung_object_name,
    statefulset_generate_name,
)
