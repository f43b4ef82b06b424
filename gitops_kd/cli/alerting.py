"""`gitops-kd run`'s alert options: the channels (--alert-webhook/-slack/-alertmanager), sources and severity."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import click

from gitops_kd.alerts.hub import AlertHub
from gitops_kd.alerts.model import SEVERITIES, SOURCES, WARNING
from gitops_kd.alerts.registry import make_channel
from gitops_kd.alerts.sources import RecordAlerts


def alert_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The alert flags, in the style of --drift-webhook."""
    for opt in reversed([
        click.option("--alert-webhook", multiple=True, metavar="URL",
                     help="POST alerts (drift, stalls, refused commits, Git health) as JSON to this http(s) URL "
                          "(repeatable; a drift alert keeps the --drift-webhook payload)."),
        click.option("--alert-slack", multiple=True, metavar="URL",
                     help="POST alerts to this Slack-compatible incoming webhook (text + blocks; repeatable)."),
        click.option("--alert-alertmanager", multiple=True, metavar="URL",
                     help="POST alerts to this Alertmanager (URL/api/v2/alerts; resolved by endsAt; repeatable)."),
        click.option("--alert-source", "alert_sources", multiple=True, type=click.Choice(SOURCES),
                     help="Only alert these sources (repeatable; default: all)."),
        click.option("--alert-min-severity", type=click.Choice(SEVERITIES), default=WARNING, show_default=True,
                     help="Send alerts of this severity or worse (drift and refused commits are warning, stalls "
                          "and Git unreadable critical)."),
    ]):
        fn = opt(fn)
    return fn


def alert_hub(webhooks: Sequence[str], slacks: Sequence[str], alertmanagers: Sequence[str],
              sources: Sequence[str], min_severity: str, metrics: Any = None) -> AlertHub | None:
    """The hub of the configured channels, or None when no channel is configured."""
    wanted = [("webhook", u) for u in webhooks] + [("slack", u) for u in slacks] + \
        [("alertmanager", u) for u in alertmanagers]
    if not wanted:
        return None
    channels = []
    for kind, url in wanted:
        on_drop = partial(metrics.alert_dropped, kind) if metrics is not None else None
        try:
            channels.append(make_channel(kind, url, on_drop=on_drop))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint=f"--alert-{kind}") from exc
    return AlertHub(channels, sources=sources or SOURCES, min_severity=min_severity)


def watch_record(hub: AlertHub | None, record: Any, *, kind: str, not_ready_after: int) -> None:
    """Refused commits and Git health alerts from the instance record's transitions."""
    if hub is not None:
        record.listeners.append(RecordAlerts(hub, kind=kind, namespace=record.namespace, name=record.name,
                                             not_ready_after=not_ready_after))
