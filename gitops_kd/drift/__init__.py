"""Drift: detect out-of-band edits of the fields gitops-kd owns, alert once per occurrence, revert or not by policy."""

from gitops_kd.constants import POLICY_ANNOTATION
from gitops_kd.drift.alert import DRIFT_DETECTED, DRIFT_RESOLVED, DRIFT_REVERTED, DriftAlerter, payload
from gitops_kd.drift.detect import detect, upgrade_in_progress
from gitops_kd.drift.guard import DriftGuard
from gitops_kd.drift.model import Drift, FieldChange
from gitops_kd.drift.policy import ALERT_ONLY, REVERT, DriftPolicy, filter_plan
from gitops_kd.drift.rules import DEFAULT_IGNORE, IgnoreRules, RulesError
from gitops_kd.drift.tracker import DriftTracker, Transitions
from gitops_kd.kd.layout import SERVICE_KIND as SERVICE
from gitops_kd.kd.layout import STATEFULSET_KIND as STATEFULSET

__all__ = [
    "ALERT_ONLY",
    "DEFAULT_IGNORE",
    "DRIFT_DETECTED",
    "DRIFT_RESOLVED",
    "DRIFT_REVERTED",
    "POLICY_ANNOTATION",
    "REVERT",
    "SERVICE",
    "STATEFULSET",
    "Drift",
    "DriftAlerter",
    "DriftGuard",
    "DriftPolicy",
    "DriftTracker",
    "FieldChange",
    "IgnoreRules",
    "RulesError",
    "Transitions",
    "detect",
    "filter_plan",
    "payload",
    "upgrade_in_progress",
]
