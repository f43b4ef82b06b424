"""Kubernetes Event bodies (core/v1) for gitops-kd's reasons, built purely from the involved object."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gitops_kd.redact import redact
from gitops_kd.status.conditions import rfc3339
from kubeplumb.names import NORMAL, WARNING

COMPONENT = "gitops-kd"

# Reasons (CamelCase, as Kubernetes reasons are).
UPGRADE_STARTED = "UpgradeStarted"
DOWNGRADE_STARTED = "DowngradeStarted"
ADOPTED = "Adopted"
DEPLOYED = "Deployed"  # a cluster gitops-kd created from Git, recorded at its first version
STRATEGY_SET = "UpdateStrategySet"
APP_SWITCHED = "AppSwitched"  # a KDCluster's spec.app switched: a native upgrade on KubeDirector's live-app-upgrade branch
TEMPLATE_UPDATED = "TemplateUpdated"
PORTS_UPDATED = "ServicePortsUpdated"
LABELS_RESTORED = "LabelsRestored"  # KubeDirector's labels put back on a role StatefulSet
BREAK_GLASS_CLEARED = "BreakGlassCleared"  # a break-glass annotation left on a managed object removed
POD_REPLACED = "PodReplaced"
MIGRATION_SUCCEEDED = "MigrationSucceeded"
HOOK_SUCCEEDED = "HookSucceeded"
GATE_STARTED = "GateStarted"
GATE_PASSED = "GatePassed"
UPGRADE_SUCCEEDED = "UpgradeSucceeded"
DOWNGRADE_SUCCEEDED = "DowngradeSucceeded"  # a downgrade (a revert of an upgrade) finished
UPGRADE_STALLED = "UpgradeStalled"
STALL_LIFTED = "StallLifted"  # an apply stall ended: the write went through, or Git no longer asks for it
ROLLOUT_HALTED = "RolloutHalted"
REVERT_PUSHED = "RevertPushed"
REVERT_FAILED = "RevertFailed"
APPLIED = "Applied"
PRUNED = "Pruned"
PRUNE_FAILED = "PruneFailed"
COMMIT_REFUSED = "CommitRefused"
GIT_CACHE_RECOVERED = "GitCacheRecovered"
GIT_UNREADABLE = "GitUnreadable"
RECORD_REWRITTEN = "RecordRewritten"  # the GitOpsKDSource's status was edited out of band: the leader wrote it back
RECORD_RECREATED = "RecordRecreated"  # the GitOpsKDSource was deleted: the leader created it again

MESSAGE_LIMIT = 1024


def involved(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The involvedObject reference of an object dict (apiVersion, kind, namespace, name, uid, rv)."""
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
    }
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    if meta.get("resourceVersion"):
        ref["resourceVersion"] = meta["resourceVersion"]
    return ref


def event_body(
    ref: Mapping[str, Any],
    reason: str,
    message: str,
    *,
    type_: str = NORMAL,
    now: datetime,
    component: str = COMPONENT,
    host: str = "",
) -> dict[str, Any]:
    """A core/v1 Event about `ref`; its name is `<object>.<16 hex>` (unique per reason, message, time)."""
    if type_ not in (NORMAL, WARNING):
        raise ValueError(f"event type must be {NORMAL} or {WARNING}, got {type_!r}")
    message = redact(message)
    if len(message) > MESSAGE_LIMIT:
        message = message[: MESSAGE_LIMIT - 3] + "..."
    stamp = rfc3339(now)
    digest = hashlib.sha256(f"{ref.get('uid')}|{reason}|{message}|{now.isoformat()}".encode()).hexdigest()[:16]
    source: dict[str, Any] = {"component": component}
    if host:
        source["host"] = host
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{ref.get('name')}.{digest}", "namespace": ref.get("namespace") or "default"},
        "involvedObject": dict(ref),
        "reason": reason,
        "message": message,
        "type": type_,
        "source": source,
        "reportingComponent": component,
        "reportingInstance": host or component,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
