"""Health: one pure function per kind that turns a live object into a status and message."""

from gitops_kd.health.cluster import ClusterHealth, ObjectHealth, aggregate, cluster_health, object_healths
from gitops_kd.health.dispatch import health_of
from gitops_kd.health.kdcluster import kdcluster_health
from gitops_kd.health.kdrollout import kdrollout_health
from gitops_kd.health.model import SEVERITY, Health, HealthStatus, is_worse, worst
from gitops_kd.health.pod import pod_health
from gitops_kd.health.pvc import pvc_health
from gitops_kd.health.service import service_health
from gitops_kd.health.statefulset import statefulset_health

__all__ = [
    "SEVERITY",
    "ClusterHealth",
    "Health",
    "HealthStatus",
    "ObjectHealth",
    "aggregate",
    "cluster_health",
    "health_of",
    "is_worse",
    "kdcluster_health",
    "kdrollout_health",
    "object_healths",
    "pod_health",
    "pvc_health",
    "service_health",
    "statefulset_health",
    "worst",
]
