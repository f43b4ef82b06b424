"""`gitops-kd run`'s alert options: the channels (--alert-webhook/-slack/-alertmanager), sources and severity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from gitops_kd.alerts.model import SEVERITIES, SOURCES, WARNING


def _urls(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    for url in value:
        if not url.startswith(("http://", "https://")):
            raise click.BadParameter(f"{url!r}: must start with http:// or https://")
    return value


def alert_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The alert flags, in the style of --drift-webhook."""
    for opt in reversed(
        [
            click.option(
                "--alert-webhook",
                multiple=True,
                metavar="URL",
                callback=_urls,
                help="POST alerts (drift, stalls, refused commits, Git health) as JSON to this http(s) URL "
                "(repeatable; a drift alert keeps the --drift-webhook payload).",
            ),
            click.option(
                "--alert-slack",
                multiple=True,
                metavar="URL",
                callback=_urls,
                help="POST alerts to this Slack-compatible incoming webhook (text + blocks; repeatable).",
            ),
            click.option(
                "--alert-alertmanager",
                multiple=True,
                metavar="URL",
                callback=_urls,
                help="POST alerts to this Alertmanager (URL/api/v2/alerts; resolved by endsAt; repeatable).",
            ),
            click.option(
                "--alert-source",
                "alert_sources",
                multiple=True,
                type=click.Choice(SOURCES),
                help="Only alert these sources (repeatable; default: all).",
            ),
            click.option(
                "--alert-min-severity",
                type=click.Choice(SEVERITIES),
                default=WARNING,
                show_default=True,
                help="Send alerts of this severity or worse (drift and refused commits are warning, stalls "
                "and Git unreadable critical).",
            ),
        ]
    ):
        fn = opt(fn)
    return fn
