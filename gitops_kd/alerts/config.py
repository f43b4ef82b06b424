"""The alerts edge built from `gitops-kd run`'s settings: an AlertHub of the configured channels, record listeners."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from gitops_kd.alerts.hub import AlertHub
from gitops_kd.alerts.model import SOURCES, Alert
from gitops_kd.alerts.registry import make_channel
from gitops_kd.alerts.sources import RecordAlerts
from gitops_kd.kd.layout import KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.plan.focus import FLEET_KEY, WorkKey, app_key, cluster_key


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


def alert_key(alert: Alert) -> WorkKey:
    """The work key whose holder sends ``alert``: its KDCluster's (a drift of an object of a cluster too), its
    KDApp's, else the fleet's (the instance record's alerts: Git health, refused commits), held with shard 0."""
    s = alert.subject
    if s.kind == KDCLUSTER_KIND:
        return cluster_key((s.namespace, s.name))
    if alert.labels.get("cluster"):
        return cluster_key((s.namespace, alert.labels["cluster"]))
    if s.kind == KDAPP_KIND:
        return app_key((s.namespace, s.name))
    return FLEET_KEY


def send_when_owned(hub: AlertHub | None, owns: Callable[[WorkKey], bool]) -> None:
    """Sharding: one alert per event whatever the replica count: only the replica owning alert_key sends it."""
    if hub is not None:
        hub.sends = lambda alert: owns(alert_key(alert))


def watch_record(hub: AlertHub | None, record: Any, *, kind: str, not_ready_after: int) -> None:
    """Refused commits and Git health alerts from the instance record's transitions."""
    if hub is not None and record is not None:
        record.listeners.append(
            RecordAlerts(hub, kind=kind, namespace=record.namespace, name=record.name, not_ready_after=not_ready_after)
        )
