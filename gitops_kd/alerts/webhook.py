"""The generic JSON webhook channel (and WebhookNotifier, the drift webhook of `--drift-webhook`).

A drift alert is POSTed as the drift payload of docs/drift.md (object, fields, commit, action, detectedAt,
state detected|resolved) unchanged; other alerts as {source, severity, state, fingerprint, object, message,
labels, startsAt, endsAt}.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gitops_kd.alerts.delivery import Sender
from gitops_kd.alerts.model import Alert, stamp
from gitops_kd.alerts.registry import ChannelKind, register


def render(alert: Alert) -> dict[str, Any]:
    if alert.details is not None:
        return dict(alert.details)
    s = alert.subject
    return {
        "source": alert.source,
        "severity": alert.severity,
        "state": alert.state,
        "fingerprint": alert.fingerprint,
        "object": {"kind": s.kind, "namespace": s.namespace, "name": s.name},
        "message": alert.message,
        "labels": dict(alert.labels),
        "startsAt": stamp(alert.starts_at),
        "endsAt": stamp(alert.ends_at),
    }


WEBHOOK = register(ChannelKind("webhook", render))


class WebhookNotifier(Sender):
    """Posts JSON payloads to ``url``; ``notify(payload)`` never blocks (see alerts/delivery.py)."""

    def __init__(self, url: str, **kw: Any) -> None:
        super().__init__(url, what="drift webhook", **kw)

    def notify(self, payload: Mapping[str, Any]) -> bool:
        """Queue one payload; False when the queue was full (its oldest payload dropped) or it is closed."""
        return self.send(json.dumps(payload, sort_keys=True, default=str).encode())
