"""The Slack-compatible incoming-webhook channel: {text, blocks} (Slack, Mattermost, Rocket.Chat accept it)."""

from __future__ import annotations

from typing import Any

from gitops_kd.alerts.model import FIRING, Alert
from gitops_kd.alerts.registry import ChannelKind, register

_ICON = {"info": ":information_source:", "warning": ":warning:", "critical": ":rotating_light:"}


def render(alert: Alert) -> dict[str, Any]:
    s = alert.subject
    head = ("FIRING" if alert.state == FIRING else "RESOLVED") + f" [{alert.source}] {s.kind} {s.namespace}/{s.name}"
    icon = _ICON[alert.severity] if alert.state == FIRING else ":white_check_mark:"
    text = f"{icon} {head}: {alert.message}"
    fields = [
        {"type": "mrkdwn", "text": f"*{k}*\n{v}"}
        for k, v in [("severity", alert.severity), ("fingerprint", alert.fingerprint), *sorted(alert.labels.items())]
    ]
    return {
        "text": text,
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"{icon} *{head}*"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": alert.message}},
            {"type": "section", "fields": fields[:10]},
        ],
    }


SLACK = register(ChannelKind("slack", render))
