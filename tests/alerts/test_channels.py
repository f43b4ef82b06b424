"""Alert channels against real HTTP receivers on 127.0.0.1: Alertmanager v2, Slack-shaped, JSON webhook; the hub
fires once per condition and resolves it; a full queue drops its oldest alert and counts it."""

from __future__ import annotations

import socket
from datetime import UTC, datetime

from gitops_kd.alerts import AlertHub, make_channel
from gitops_kd.alerts.model import CRITICAL, STALL, WARNING, Alert, Subject
from gitops_kd.server.metrics import ControllerMetrics
from tests.drift.receiver import Receiver

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
T1 = datetime(2026, 1, 1, 12, 5, tzinfo=UTC)


def stall(reason: str = "GateTimeout") -> Alert:
    return Alert(
        STALL,
        CRITICAL,
        Subject("KubeDirectorCluster", "default", "hello-dev"),
        f"KDRollout default/hello-dev stalled ({reason})",
        {"reason": reason},
    )


def test_alertmanager_gets_v2_alerts_fired_once_and_resolved_by_ends_at() -> None:
    clock = [T0]
    with Receiver() as rx:
        hub = AlertHub([make_channel("alertmanager", rx.url.removesuffix("/hook"), base_delay=0.05)], now=lambda: clock[0])
        try:
            assert hub.fire(stall()) and not hub.fire(stall())  # one POST per condition, however often seen
            clock[0] = T1
            assert hub.resolve(stall()) and not hub.resolve(stall())
            assert hub.flush(10)
            fired, resolved = rx.wait(2)
            assert rx.paths == ["/api/v2/alerts", "/api/v2/alerts"]
            assert fired == [
                {
                    "labels": {
                        "alertname": "GitOpsKDRolloutStalled",
                        "source": "stall",
                        "severity": "critical",
                        "kind": "KubeDirectorCluster",
                        "namespace": "default",
                        "name": "hello-dev",
                        "fingerprint": stall().fingerprint,
                        "reason": "GateTimeout",
                    },
                    "annotations": {
                        "summary": "stall: KubeDirectorCluster default/hello-dev",
                        "description": "KDRollout default/hello-dev stalled (GateTimeout)",
                    },
                    "startsAt": "2026-01-01T12:00:00Z",
                }
            ]
            assert resolved[0]["labels"] == fired[0]["labels"]  # the same alert in Alertmanager's eyes
            assert resolved[0]["startsAt"] == "2026-01-01T12:00:00Z" and resolved[0]["endsAt"] == "2026-01-01T12:05:00Z"
        finally:
            hub.close()


def test_slack_gets_text_and_blocks_and_sources_and_severity_filter() -> None:
    with Receiver() as rx:
        hub = AlertHub([make_channel("slack", rx.url, base_delay=0.05)], sources=["stall"], min_severity=WARNING)
        try:
            other = Alert("git-health", CRITICAL, Subject("GitOpsKDSource", "default", "gitops-kd"), "unreadable")
            assert not hub.fire(other)  # a source not asked for
            assert not hub.fire(Alert(STALL, "info", Subject("KubeDirectorCluster", "default", "x"), "minor"))
            assert hub.fire(stall())
            hub.resolve(stall())
            assert hub.flush(10)
            fired, resolved = rx.wait(2)
            assert len(rx.bodies) == 2
            assert fired["text"].startswith(":rotating_light: FIRING [stall] KubeDirectorCluster default/hello-dev")
            assert [b["type"] for b in fired["blocks"]] == ["section", "section", "section"]
            assert fired["blocks"][1]["text"]["text"] == "KDRollout default/hello-dev stalled (GateTimeout)"
            assert resolved["text"].startswith(":white_check_mark: RESOLVED [stall]")
        finally:
            hub.close()


def test_webhook_channel_posts_the_generic_payload() -> None:
    with Receiver() as rx:
        hub = AlertHub([make_channel("webhook", rx.url, base_delay=0.05)], now=lambda: T0)
        try:
            hub.fire(stall())
            assert hub.flush(10)
            assert rx.wait(1)[0] == {
                "source": "stall",
                "severity": "critical",
                "state": "firing",
                "fingerprint": stall().fingerprint,
                "object": {"kind": "KubeDirectorCluster", "namespace": "default", "name": "hello-dev"},
                "message": "KDRollout default/hello-dev stalled (GateTimeout)",
                "labels": {"reason": "GateTimeout"},
                "startsAt": "2026-01-01T12:00:00Z",
                "endsAt": None,
            }
        finally:
            hub.close()


def test_a_full_queue_drops_the_oldest_counts_it_and_never_blocks() -> None:
    """Invariant: alerting never blocks a reconcile; when a channel's queue is full the oldest alert goes, and
    gitops_kd_alerts_dropped_total says so."""
    with socket.socket() as s:  # a port nobody listens on: every POST is retried with a long backoff
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    metrics = ControllerMetrics()
    channel = make_channel(
        "webhook",
        f"http://127.0.0.1:{port}/hook",
        max_attempts=50,
        base_delay=5.0,
        queue_size=2,
        on_drop=lambda: metrics.alert_dropped("webhook"),
    )
    hub = AlertHub([channel])
    try:
        for reason in ("A", "B", "C", "D", "E"):
            hub.fire(stall(reason))
        assert channel.sender.dropped >= 2
        assert (
            metrics.registry.get_sample_value("gitops_kd_alerts_dropped_total", {"channel": "webhook"}) == channel.sender.dropped
        )
        queued = list(channel.sender._queue.queue)  # what is left to send: the newest
        assert queued and b'"E"' in queued[-1] and not any(b'"A"' in q for q in queued)
    finally:
        hub.close()


def test_unknown_channel_and_bad_url_are_refused() -> None:
    import pytest

    with pytest.raises(ValueError, match="alert channel 'pager': unknown"):
        make_channel("pager", "http://x")
    with pytest.raises(ValueError, match="alert slack URL 'ftp://x': must start with http"):
        make_channel("slack", "ftp://x")
