"""The alerts edge built from `gitops-kd run`'s settings: an AlertHub of the configured channels, record listeners."""

from __future__ import annotations

from functools import partial
from typing import Any

from gitops_kd.alerts.hub import AlertHub
from gitops_kd.alerts.model import SOURCES
from gitops_kd.alerts.registry import make_channel
from gitops_kd.alerts.sources import RecordAlerts


def build_hub(options: Any, metrics: Any = None) -> AlertHub | None:
    """The hub of ``options``'s channels (controller.options.AlertOptions), or None when none is configured.
    Raises ValueError naming the flag for a bad URL."""
    wanted = (
        [("webhook", u) for u in options.webhooks]
        + [("slack", u) for u in options.slacks]
        + [("alertmanager", u) for u in options.alertmanagers]
    )
    if not wanted:
        return None
    channels = []
    for kind, url in wanted:
        on_drop = partial(metrics.alert_dropped, kind) if metrics is not None else None
        try:
            channels.append(make_channel(kind, url, on_drop=on_drop))
        except ValueError as exc:
            raise ValueError(f"--alert-{kind}: {exc}") from exc
    return AlertHub(channels, sources=options.sources or SOURCES, min_severity=options.min_severity)


def watch_record(hub: AlertHub | None, record: Any, *, kind: str, not_ready_after: int) -> None:
    """Refused commits and Git health alerts from the instance record's transitions."""
    if hub is not None and record is not None:
        record.listeners.append(
            RecordAlerts(hub, kind=kind, namespace=record.namespace, name=record.name, not_ready_after=not_ready_after)
        )
