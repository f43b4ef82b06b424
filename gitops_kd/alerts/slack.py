"""The Slack-compatible incoming-webhook channel: {text, blocks} (Slack, Mattermost, Rocket.Chat accept it)."""

from __future__ import annotations

from typing import Any

from gitops_kd.alerts.model import FIRING, Alert
from gitops_kd.alerts.registry import ChannelKind, register

_ICON = {"info": ":information_source:", "warning": ":warning:", "critical": ":rotating_light:"}


def escape(text: str) -> str:
    """Text as Slack mrkdwn shows it literally: &, < and > as &amp; &lt; &gt; (Slack's escaping rules), so a message
    cannot hold a control sequence: a mention (<!channel>, <@U…>) or a link (<url|text>)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render(alert: Alert) -> dict[str, Any]:
    s = alert.subject
    state = "FIRING" if alert.state == FIRING else "RESOLVED"
    head = escape(f"{state} [{alert.source}] {s.kind} {s.namespace}/{s.name}")
    icon = _ICON[alert.severity] if alert.state == FIRING else ":white_check_mark:"
    message = escape(alert.message)
    text = f"{icon} {head}: {message}"
    fields = [
        {"type": "mrkdwn", "text": f"*{escape(k)}*\n{escape(v)}"}
        for k, v in [("severity", alert.severity), ("fingerprint", alert.fingerprint), *sorted(alert.labels.items())]
    ]
    return {
        "text": text,
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"{icon} *{head}*"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": message}},
            {"type": "section", "fields": fields[:10]},
        ],
    }


SLACK = register(ChannelKind("slack", render))
