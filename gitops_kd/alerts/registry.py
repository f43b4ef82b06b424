"""The channel registry: a channel kind (webhook, slack, alertmanager) -> how to render an Alert for it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gitops_kd.alerts.delivery import Sender
from gitops_kd.alerts.model import Alert

Render = Callable[[Alert], Any]  # the JSON document to POST, or None to skip this alert


@dataclass(frozen=True)
class ChannelKind:
    """One channel kind: its name, how it renders an alert, and the path it POSTs to under the URL given."""

    name: str
    render: Render
    path: str = ""


CHANNELS: dict[str, ChannelKind] = {}


def register(kind: ChannelKind) -> ChannelKind:
    """Make ``kind`` available to ``make_channel`` (each channel module registers itself on import)."""
    if kind.name in CHANNELS:
        raise ValueError(f"alert channel {kind.name!r} registered twice")
    CHANNELS[kind.name] = kind
    return kind


class Channel:
    """One configured destination: renders each alert with its kind and hands the body to its own Sender."""

    def __init__(self, kind: ChannelKind, url: str, **sender: Any) -> None:
        self.kind = kind
        self.sender = Sender(url.rstrip("/") + kind.path if kind.path else url, what=f"alert {kind.name}", **sender)

    def send(self, alert: Alert) -> bool:
        doc = self.kind.render(alert)
        if doc is None:
            return False
        return self.sender.send(json.dumps(doc, sort_keys=True, default=str).encode())

    def flush(self, timeout: float) -> bool:
        return self.sender.flush(timeout)

    def close(self) -> None:
        self.sender.close()


def make_channel(name: str, url: str, **sender: Any) -> Channel:
    """A Channel of the registered kind ``name`` sending to ``url``."""
    _load()
    if name not in CHANNELS:
        raise ValueError(f"alert channel {name!r}: unknown (known: {', '.join(sorted(CHANNELS))})")
    return Channel(CHANNELS[name], url, **sender)


def _load() -> None:
    """Import the channel modules (each registers itself)."""
    from gitops_kd.alerts import alertmanager, slack, webhook  # noqa: F401
