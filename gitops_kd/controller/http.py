"""The controller's HTTP endpoints (aiohttp): POST /webhook (poll now), GET /healthz, GET /readyz, /ui.

`make_app(target)` returns a plain aiohttp Application, so more routes and middlewares (HMAC
verification of webhooks, /metrics) can be added to it before `HttpServer(app, ...)` starts it.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aiohttp import web
from aiohttp.typedefs import Middleware

from gitops_kd.redact import redact

log = logging.getLogger(__name__)

TARGET_KEY: web.AppKey[Triggerable] = web.AppKey("gitops_kd_controller")


class Triggerable(Protocol):
    """What the endpoints need from the controller."""

    def trigger_poll(self) -> str | None: ...

    @property
    def ready(self) -> bool: ...

    @property
    def healthy(self) -> bool: ...


async def webhook(request: web.Request) -> web.Response:
    """Any POST triggers an immediate poll of the Git source (the body is not needed); the answer says what was
    done (a standby asks the leader: Replica.trigger_poll)."""
    await request.read()
    done = await asyncio.get_running_loop().run_in_executor(None, request.app[TARGET_KEY].trigger_poll)
    return web.json_response({"status": done or "poll triggered"}, status=202)


REDACTED_TYPES = ("application/json", "text/html", "text/plain")  # answers that can carry a message or a label


@web.middleware
async def redact_answers(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every JSON, HTML and text answer (the UI and its /ui/api/*, /metrics labels, /webhook) passes gitops_kd.redact:
    no credential of a URL or a message leaves the process through HTTP."""
    response = await handler(request)
    if isinstance(response, web.Response) and response.content_type in REDACTED_TYPES and response.body is not None:
        body = response.body
        if isinstance(body, bytes | bytearray):
            charset = response.charset or "utf-8"
            text = bytes(body).decode(charset, errors="replace")
            clean = redact(text)
            if clean != text:
                response.body = clean.encode(charset)
    return response


async def healthz(request: web.Request) -> web.Response:
    ok = request.app[TARGET_KEY].healthy
    return web.Response(text="ok\n" if ok else "unhealthy\n", status=200 if ok else 500)


async def readyz(request: web.Request) -> web.Response:
    ok = request.app[TARGET_KEY].ready
    return web.Response(text="ok\n" if ok else "not ready\n", status=200 if ok else 503)


def make_app(
    target: Triggerable,
    *,
    middlewares: tuple[Middleware, ...] = (),
    webhook_secret: bytes | None = None,
    branch: str | None = None,
    metrics: Any = None,
    ui: Any = None,
) -> web.Application:
    """The Application with /webhook, /healthz, /readyz (and /metrics with `metrics`); add routes before serving.

    With `webhook_secret`, /webhook is gitops_kd.server.webhook's handler: GitHub X-Hub-Signature-256
    (or X-Gitlab-Token) verified, push events of `branch` only; without it any POST triggers a poll.
    `metrics` is a gitops_kd.server.metrics.ControllerMetrics served on GET /metrics.
    `ui` is a gitops_kd.server.ui.UiConfig: the read-only web UI under /ui (docs/ui.md).
    """
    extra: list[Any] = []
    if ui is not None:
        from gitops_kd.server.ui import auth_middleware

        extra.append(auth_middleware(ui.auth))
    app = web.Application(middlewares=[redact_answers, *middlewares, *extra])
    app[TARGET_KEY] = target
    if webhook_secret is not None:
        from gitops_kd.server.webhook import make_webhook_handler

        app.router.add_route(
            "*", "/webhook", make_webhook_handler(webhook_secret, target.trigger_poll, branch=branch, allow_gitlab_token=True)
        )
    else:
        app.router.add_post("/webhook", webhook)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    if metrics is not None:
        from gitops_kd.server.metrics import make_metrics_handler

        app.router.add_get("/metrics", make_metrics_handler(metrics))
    if ui is not None:
        from gitops_kd.server.ui import add_ui_routes

        add_ui_routes(app, ui)
    return app


class HttpServer:
    """Serves an aiohttp Application on its own event-loop thread; port 0 picks a free port."""

    def __init__(
        self, app: web.Application, host: str = "127.0.0.1", port: int = 0, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.app = app
        self.ssl_context = ssl_context
        self.host = host
        self.port = port
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.ssl_context else 'http'}://{self.host}:{self.port}"

    def start(self) -> HttpServer:
        started = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(self._start())
            except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
                errors.append(exc)
                started.set()
                return
            started.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="gitops-kd-http", daemon=True)
        self._thread.start()
        started.wait(30)
        if errors:
            raise RuntimeError(f"cannot listen on {self.host}:{self.port}: {errors[0]}") from errors[0]
        log.info(
            "HTTP endpoints on %s (%s)",
            self.url,
            ", ".join(sorted({str(r.resource.canonical) for r in self.app.router.routes() if r.resource})),
        )
        return self

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.ssl_context)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or ()  # noqa: SLF001 - the bound port for port 0
        if sockets:
            self.port = sockets[0].getsockname()[1]

    def stop(self) -> None:
        if self._thread is None:
            return
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._thread = None
        self._loop.close()
