"""Observe: what the controller sees in the cluster, as immutable value objects (model only here)."""

from gitops_kd.observed import (
    Key,
    ObservedApp,
    ObservedCluster,
    ObservedPod,
    ObservedRollout,
    ObservedService,
    ObservedState,
    ObservedStatefulSet,
    PodProgress,
)

__all__ = [
    "Key",
    "ObservedApp",
    "ObservedCluster",
    "ObservedPod",
    "ObservedRollout",
    "ObservedService",
    "ObservedState",
    "ObservedStatefulSet",
    "PodProgress",
]
