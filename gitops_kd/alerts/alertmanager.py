"""The Alertmanager channel: POST {url}/api/v2/alerts with labels, annotations, startsAt, endsAt (resolve = endsAt)."""

from __future__ import annotations

from typing import Any

from gitops_kd.alerts.model import Alert, stamp
from gitops_kd.alerts.registry import ChannelKind, register

ALERTNAME = {
    "drift": "GitOpsKDDrift",
    "stall": "GitOpsKDRolloutStalled",
    "refused-commit": "GitOpsKDCommitRefused",
    "git-health": "GitOpsKDGitUnreadable",
}


def render(alert: Alert) -> list[dict[str, Any]]:
    s = alert.subject
    labels = {
        "alertname": ALERTNAME[alert.source],
        "source": alert.source,
        "severity": alert.severity,
        "kind": s.kind,
        "namespace": s.namespace,
        "name": s.name,
        "fingerprint": alert.fingerprint,
        **{k: str(v) for k, v in alert.labels.items()},
    }
    one: dict[str, Any] = {
        "labels": labels,
        "annotations": {"summary": f"{alert.source}: {s.kind} {s.namespace}/{s.name}", "description": alert.message},
    }
    if alert.starts_at is not None:
        one["startsAt"] = stamp(alert.starts_at)
    if alert.ends_at is not None:
        one["endsAt"] = stamp(alert.ends_at)
    return [one]


ALERTMANAGER = register(ChannelKind("alertmanager", render, path="/api/v2/alerts"))
