"""The controller's HTTP endpoints over real HTTP on 127.0.0.1:0."""

from __future__ import annotations

import urllib.error
import urllib.request

from gitops_kd.controller.http import HttpServer, make_app
from gitops_kd.server.metrics import ControllerMetrics
from gitops_kd.server.webhook import sign


class Target:
    """Stands in for the Controller (the endpoints are under test, not the controller)."""

    def __init__(self) -> None:
        self.triggers = 0
        self.ready = False
        self.healthy = True

    def trigger_poll(self) -> None:
        self.triggers += 1


def call(url: str, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None) -> int:
    req = urllib.request.Request(url, method=method, data=body, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_health_ready_and_webhook() -> None:
    target = Target()
    server = HttpServer(make_app(target), "127.0.0.1", 0).start()
    try:
        assert server.port != 0
        assert call(server.url + "/healthz") == 200
        assert call(server.url + "/readyz") == 503
        target.ready = True
        assert call(server.url + "/readyz") == 200
        target.healthy = False
        assert call(server.url + "/healthz") == 500
        assert call(server.url + "/webhook", "POST", b"anything") == 202 and target.triggers == 1
        assert call(server.url + "/webhook") == 405
        assert call(server.url + "/metrics") == 404
    finally:
        server.stop()


def test_signed_webhook_and_metrics_when_configured() -> None:
    target = Target()
    metrics = ControllerMetrics()
    metrics.commit_refused()
    server = HttpServer(make_app(target, webhook_secret=b"k", branch="main", metrics=metrics), "127.0.0.1", 0).start()
    try:
        body = b'{"ref": "refs/heads/main"}'
        assert call(server.url + "/webhook", "POST", body, {"X-GitHub-Event": "push"}) == 401
        signed = {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(b"k", body), "Content-Type": "application/json"}
        assert call(server.url + "/webhook", "POST", body, signed) == 202 and target.triggers == 1
        other = b'{"ref": "refs/heads/dev"}'
        assert (
            call(
                server.url + "/webhook",
                "POST",
                other,
                {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(b"k", other), "Content-Type": "application/json"},
            )
            == 200
        )
        assert target.triggers == 1
        with urllib.request.urlopen(server.url + "/metrics", timeout=10) as resp:
            assert "gitops_kd_refused_commits_total 1.0" in resp.read().decode()
    finally:
        server.stop()
