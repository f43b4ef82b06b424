"""The embedded API server: an aiohttp app on loopback, run in a background thread, started from sync code."""

from __future__ import annotations

import asyncio
import logging
import tempfile
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from aiohttp import web

from kdsim import errors
from kdsim.apiserver import bootstrap, discovery, kd_webhook, openapi, openapi_v2, persistence, tls, webhooks
from kdsim.apiserver.access import AccessLog
from kdsim.apiserver.deletion import Deleter
from kdsim.apiserver.faults import FaultInjector
from kdsim.apiserver.handlers import PodHandler, ResourceHandlers, error_response, json_response, warned
from kdsim.apiserver.objects import ObjectApi
from kdsim.apiserver.registry import Registry
from kdsim.apiserver.stats import RequestStats
from kdsim.apiserver.storage import HISTORY_LIMIT, Store
from kdsim.apiserver.watch import WatchHub
from kdsim.httplimits import request_limits
from kdsim.kubedirector.live_upgrade import MODE as LIVE_UPGRADE

log = logging.getLogger(__name__)


class ApiServer:
    """A Kubernetes API server emulator bound to 127.0.0.1 (port 0 = ephemeral), HTTPS by default."""

    def __init__(
        self,
        state_dir: Path | None = None,
        *,
        port: int = 0,
        use_tls: bool = True,
        bookmark_interval: float = 5.0,
        pod_grace_cap: float = 1.0,
        history_limit: int = HISTORY_LIMIT,
        kd_app_edits: str = kd_webhook.STRICT,
        crds: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self.port = port
        self.use_tls = use_tls
        self.bookmark_interval = bookmark_interval
        self.crds = list(crds)
        self.store = Store(history_limit)
        self.registry = Registry()
        self.objects = ObjectApi(self.store, self.registry)
        self.deleter = Deleter(self.objects, schedule=self._schedule, pod_grace_cap=pod_grace_cap)
        self.kd_webhook = kd_webhook.KdAppWebhook(self.store, kd_app_edits)
        self.kd_app_edits = kd_app_edits
        self.objects.mutate = kd_webhook.KdMutations(
            self.store, cluster_rules=kd_app_edits != kd_webhook.UPGRADE, live_upgrade_rules=kd_app_edits == LIVE_UPGRADE
        )
        builtin = self.kd_webhook.builtin()
        self.webhooks = webhooks.Dispatcher(self.store, self.registry, [builtin] if builtin is not None else [])
        self.hub = WatchHub()
        self.stats = RequestStats()
        self.access = AccessLog()
        self.faults = FaultInjector(_drop_watches=self.hub.drop_all)
        self.exec_handler: PodHandler | None = None
        self.log_handler: PodHandler | None = None
        self.portforward_handler: PodHandler | None = None
        self.tls: tls.TlsMaterial | None = None
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._saver: persistence.Saver | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> ApiServer:
        """Load saved state, seed the cluster, and serve; returns once the port is bound."""
        if self.state_dir is not None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            persistence.load(self.store, self.state_dir)
        bootstrap.seed(self.objects, self.crds, live_upgrade=self.kd_app_edits == LIVE_UPGRADE)
        if self.use_tls:
            self.tls = tls.load_or_generate(self.state_dir)
        self._thread = threading.Thread(target=self._run, name="apiserver", daemon=True)
        self._thread.start()
        self._ready.wait(timeout=30)
        if self._startup_error is not None:
            raise RuntimeError(f"embedded API server failed to start: {self._startup_error}") from self._startup_error
        if not self.url:
            raise RuntimeError("embedded API server did not start within 30s")
        self.deleter.resume()
        if self.state_dir is not None:
            self._saver = persistence.Saver(self.store, self.state_dir)
            self._saver.start()
            self._saver.save()
        log.info("embedded API server serving at %s", self.url)
        return self

    def stop(self) -> None:
        """Close watches, stop serving, and write the final state."""
        loop = self._loop
        if loop is not None and self._thread is not None:
            self.hub.drop_all()
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(timeout=15)
        self._loop = None
        if self._saver is not None:
            self._saver.stop()
            self._saver = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to start()
            self._startup_error = exc
            self._ready.set()
            loop.close()
            return
        self._loop = loop
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            if self._runner is not None:
                loop.run_until_complete(self._runner.cleanup())
            loop.close()

    async def _serve(self) -> None:
        app = web.Application(middlewares=[_errors_middleware], client_max_size=64 * 1024 * 1024)
        resources = ResourceHandlers(self)
        routes: dict[str, Callable[[web.Request], Awaitable[web.StreamResponse]]] = {
            "/version": self._version,
            "/healthz": self._ok,
            "/livez": self._ok,
            "/readyz": self._ok,
            "/api": self._api_versions,
            "/apis": self._api_groups,
            "/openapi/v3": self._openapi_root,
        }
        for path, handler in routes.items():
            app.router.add_get(path, handler)
            app.router.add_get(path + "/", handler)
        app.router.add_get("/openapi/v3/{gv:.+}", self._openapi_gv)
        app.router.add_get("/openapi/v2", self._openapi_v2)
        app.router.add_route("*", "/sim/faults", self._faults)
        app.router.add_route("*", "/sim/requests", self._requests)
        self._resources = resources
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        app.on_cleanup.append(lambda _app: self.webhooks.close())
        # handler_cancellation: a closed watch connection ends its handler
        self._runner = web.AppRunner(
            app, handle_signals=False, shutdown_timeout=1.0, access_log=None, handler_cancellation=True, **request_limits()
        )
        await self._runner.setup()
        ssl_ctx = self.tls.server_context(self._pki_dir()) if self.tls is not None else None
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=ssl_ctx)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"{'https' if ssl_ctx else 'http'}://127.0.0.1:{port}"

    def _pki_dir(self) -> Path:
        if self.state_dir is not None:
            return self.state_dir / "pki"
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="gitops-kd-apiserver-")
        return Path(self._tmp.name)

    def _schedule(self, delay: float, fn: Callable[[], None]) -> None:
        loop = self._loop
        if loop is None:
            fn()
            return
        loop.call_soon_threadsafe(loop.call_later, delay, fn)

    # -- non-resource endpoints ----------------------------------------------------------------
    async def _api_versions(self, request: web.Request) -> web.Response:
        return json_response(discovery.api_versions(request.host))

    async def _version(self, request: web.Request) -> web.Response:
        return json_response(discovery.version_info())

    async def _ok(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _api_groups(self, request: web.Request) -> web.Response:
        return json_response(discovery.api_group_list(self.registry))

    async def _openapi_root(self, request: web.Request) -> web.Response:
        return json_response(openapi.root_document(self.registry))

    async def _openapi_gv(self, request: web.Request) -> web.Response:
        parts = request.match_info["gv"].strip("/").split("/")
        doc = None
        loop = asyncio.get_running_loop()  # the first document builds the schemas: off the event loop
        if len(parts) == 2 and parts[0] == "api":
            doc = await loop.run_in_executor(None, openapi.gv_document, self.registry, "", parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            doc = await loop.run_in_executor(None, openapi.gv_document, self.registry, parts[1], parts[2])
        if doc is None:
            raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
        return json_response(doc)

    async def _openapi_v2(self, request: web.Request) -> web.Response:
        """JSON, or gnostic protobuf when the client asks for it (kubectl only reads protobuf)."""
        doc = await asyncio.get_running_loop().run_in_executor(None, openapi.v2_document, self.registry)
        if openapi_v2.PROTOBUF_V2 in request.headers.get("Accept", ""):
            body = await asyncio.get_running_loop().run_in_executor(None, openapi_v2.to_protobuf, doc)
            return web.Response(body=body, content_type=openapi_v2.PROTOBUF_V2_ANSWER)
        return json_response(doc)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if request.method == "GET" and parts and parts[0] in ("api", "apis") and len(parts) <= 3:
            doc: dict[str, Any] | None = None
            if parts[0] == "api" and len(parts) == 2:
                doc = discovery.resource_list(self.registry, "", parts[1])
            elif parts[0] == "apis" and len(parts) == 2:
                doc = discovery.api_group(self.registry, parts[1])
            elif parts[0] == "apis" and len(parts) == 3:
                doc = discovery.resource_list(self.registry, parts[1], parts[2])
            if doc is not None or parts[0] == "apis" or len(parts) == 2:
                if doc is None:
                    raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
                return json_response(doc)
        return await self._resources.handle(request)

    async def _requests(self, request: web.Request) -> web.Response:
        """GET: request counts by "verb resource"; DELETE: reset them."""
        if request.method == "DELETE":
            self.stats.reset()
        elif request.method != "GET":
            raise errors.method_not_allowed()
        return json_response({"requests": self.stats.to_dict(), "total": self.stats.total()})

    async def _faults(self, request: web.Request) -> web.Response:
        if request.method == "GET":
            return json_response({"rules": [r.to_dict() for r in self.faults.rules()], "openWatches": self.hub.count()})
        if request.method != "POST":
            raise errors.method_not_allowed()
        try:
            body = await request.json()
        except ValueError:
            raise errors.bad_request("/sim/faults: body must be a JSON object") from None
        if not isinstance(body, dict):
            raise errors.bad_request("/sim/faults: body must be a JSON object")
        return json_response(self.faults.apply_http(body))


@web.middleware
async def _errors_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        return cast(web.StreamResponse, await handler(request))
    except errors.ApiError as exc:
        return warned(error_response(exc), exc.warnings)
    except web.HTTPException:
        raise
    except Exception as exc:  # an emulator bug: answer like the apiserver would, and log it
        log.exception("internal error serving %s %s", request.method, request.path)
        return error_response(errors.internal(str(exc)))
