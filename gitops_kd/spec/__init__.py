"""Spec model: typed, immutable KDApp and KDCluster objects loaded and validated from files."""

from gitops_kd.constants import UPGRADE_ANNOTATION, WAVE_LABEL
from gitops_kd.spec.desired import check_desired_set, find_app
from gitops_kd.spec.errors import FieldError, SpecError
from gitops_kd.spec.freeze import FrozenMap
from gitops_kd.spec.loader import load_manifests
from gitops_kd.spec.model import (
    ClusterRole,
    ConfigPackage,
    KDApp,
    KDCluster,
    Role,
    Service,
)
from gitops_kd.spec.persist import effective_persist_dirs
from gitops_kd.spec.positions import locate
from gitops_kd.spec.upgrade import (
    Command,
    DirAction,
    DowngradeTo,
    Gate,
    Hook,
    HttpGet,
    UpgradeFrom,
    UpgradeSpec,
)
from gitops_kd.spec.version import Comparator, VersionRange, parse_app_version

__all__ = [
    "UPGRADE_ANNOTATION",
    "WAVE_LABEL",
    "ClusterRole",
    "Command",
    "Comparator",
    "ConfigPackage",
    "DirAction",
    "DowngradeTo",
    "FieldError",
    "FrozenMap",
    "Gate",
    "Hook",
    "HttpGet",
    "KDApp",
    "KDCluster",
    "Role",
    "Service",
    "SpecError",
    "UpgradeFrom",
    "UpgradeSpec",
    "VersionRange",
    "check_desired_set",
    "effective_persist_dirs",
    "find_app",
    "load_manifests",
    "locate",
    "parse_app_version",
]
