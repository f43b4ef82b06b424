"""Diff: desired vs observed, classified per role and field (pure)."""

from gitops_kd.diff.engine import app_for, app_manifest, cluster_manifest, diff, users_of
from gitops_kd.diff.model import AppDiff, ClusterDiff, DiffReport, FieldChange, PortsDiff, RoleDiff, Transition
from gitops_kd.diff.transition import compare_versions, transition

__all__ = [
    "AppDiff",
    "ClusterDiff",
    "DiffReport",
    "FieldChange",
    "PortsDiff",
    "RoleDiff",
    "Transition",
    "app_for",
    "app_manifest",
    "cluster_manifest",
    "compare_versions",
    "diff",
    "transition",
    "users_of",
]
