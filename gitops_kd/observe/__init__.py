"""Observe: what the controller sees in the cluster, as immutable value objects (model only here)."""

from gitops_kd.observed import (
    ObservedApp,
    ObservedCluster,
    ObservedPod,
    ObservedRollout,
    ObservedService,
    ObservedState,
    ObservedStatefulSet,
)
from gitops_kd.rollout.model import PodProgress
from gitops_kd.spec.state import Key

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
