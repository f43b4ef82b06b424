"""WebhookNotifier against a real aiohttp receiver: retries with backoff on 5xx, gives up, never blocks."""

from __future__ import annotations

import socket
import time

import pytest
from plan.kdworld import T0

from gitops_kd.drift import DriftAlerter, DriftPolicy
from gitops_kd.server.notify import WebhookNotifier

from .receiver import Receiver
from .test_alert import sts_drift


def test_retries_on_500_then_delivers_the_drift_payload() -> None:
    with Receiver([500, 503]) as rx:
        notifier = WebhookNotifier(rx.url, base_delay=0.05, max_delay=1.0)
        try:
            alerter = DriftAlerter(notifier=notifier, now=lambda: T0)
            alerter.process([sts_drift("evil:1")], DriftPolicy())
            alerter.process([sts_drift("evil:1")], DriftPolicy())  # same occurrence: no second POST
            assert notifier.flush(10)
            bodies = rx.wait(3)
            assert rx.statuses == [500, 503, 200]
            assert (
                bodies[0]
                == bodies[1]
                == bodies[2]
                == {
                    "object": {
                        "apiVersion": "apps/v1",
                        "kind": "StatefulSet",
                        "namespace": "default",
                        "name": "kdss-worker",
                        "cluster": "hello-dev",
                    },
                    "fields": [{"path": "spec.template.spec.containers[app].image", "expected": "hello:1", "actual": "evil:1"}],
                    "commit": "c0ffee",
                    "action": "reverted",
                    "detectedAt": "2026-01-01T12:00:00Z",
                    "state": "detected",
                }
            )
            gaps = [b - a for a, b in zip(rx.times, rx.times[1:])]
            assert gaps[0] >= 0.04 and gaps[1] >= 0.09  # 0.05s, then 0.1s: exponential
            assert (notifier.sent, notifier.failed) == (1, 0)
            alerter.process([], DriftPolicy())
            assert notifier.flush(10)
            assert rx.wait(4)[3]["state"] == "resolved"
        finally:
            notifier.close()


def test_gives_up_after_max_attempts_and_does_not_retry_4xx() -> None:
    with Receiver([500, 500, 500, 400]) as rx:
        notifier = WebhookNotifier(rx.url, max_attempts=3, base_delay=0.01)
        try:
            notifier.notify({"n": 1})
            notifier.notify({"n": 2})
            assert notifier.flush(10)
            assert [b["n"] for b in rx.bodies] == [1, 1, 1, 2]
            assert (notifier.sent, notifier.failed) == (0, 2)
        finally:
            notifier.close()


def test_unreachable_receiver_never_blocks_the_caller() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    notifier = WebhookNotifier(f"http://127.0.0.1:{port}/hook", max_attempts=50, base_delay=5.0, queue_size=2)
    try:
        start = time.monotonic()
        results = [notifier.notify({"n": i}) for i in range(5)]
        assert time.monotonic() - start < 0.5
        assert results.count(False) >= 2 and notifier.dropped >= 2
    finally:
        start = time.monotonic()
        notifier.close()
        assert time.monotonic() - start < 5  # a backoff wait is cut short


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="must start with http"):
        WebhookNotifier("ftp://x")
    with pytest.raises(ValueError, match="max_attempts 0"):
        WebhookNotifier("http://127.0.0.1:1/", max_attempts=0)
