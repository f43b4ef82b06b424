"""The kubelet's HTTPS endpoint: the paths a real API server proxies exec, attach, port-forward and logs to."""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from kdsim.apiserver import tls
from kdsim.httplimits import request_limits
from kdsim.kubelet.exec_handler import ExecHandler
from kdsim.kubelet.host import PodHost
from kdsim.kubelet.logs import LogHandler
from kdsim.kubelet.portforward import PortForwardHandler

log = logging.getLogger(__name__)

POD = "/{namespace}/{pod}"
CONTAINER = POD + "/{container}"
CONTAINER_UID = POD + "/{uid}/{container}"


@dataclass(frozen=True)
class ServingTls:
    """The kubelet's serving cert and key (PEM files; None: a self-signed pair, as a real kubelet makes) and
    the CA its clients (the API server) must present a cert from (None: any client is served)."""

    cert: Path | None = None
    key: Path | None = None
    client_ca: Path | None = None

    def context(self, workdir: Path) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        if self.cert is not None and self.key is not None:
            ctx.load_cert_chain(str(self.cert), str(self.key))
        else:
            material = tls.generate(common_name="sim-kubelet")
            workdir.mkdir(parents=True, exist_ok=True)
            cert, key = workdir / "kubelet.crt", workdir / "kubelet.key"
            cert.write_bytes(material.server_cert + material.ca_cert)
            key.write_bytes(material.server_key)
            key.chmod(0o600)
            ctx.load_cert_chain(str(cert), str(key))
        if self.client_ca is not None:
            ctx.load_verify_locations(str(self.client_ca))
            ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx


class KubeletServer:
    """Serves /exec, /attach, /run, /portForward, /containerLogs, /pods and /healthz for one Kubelet in a background thread."""

    def __init__(
        self, kubelet: PodHost, *, address: str = "127.0.0.1", port: int = 0, serving: ServingTls | None = None, workdir: Path
    ) -> None:
        self.kubelet = kubelet
        self.address, self.port = address, port
        self.serving = serving or ServingTls()
        self.workdir = workdir
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def start(self) -> KubeletServer:
        """Bind and serve; returns once the port is known (self.port)."""
        self._thread = threading.Thread(target=self._run, name="kubelet-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the kubelet endpoint did not start within 30s")
        if self._error is not None:
            raise RuntimeError(f"cannot serve the kubelet endpoint on {self.address}:{self.port}: {self._error}") from self._error
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is not None and self._thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(10)
        self._loop = None

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to start()
            self._error = exc
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
        app = web.Application()
        execs, logs, forwards = ExecHandler(self.kubelet), LogHandler(self.kubelet), PortForwardHandler(self.kubelet)
        for path in (POD, POD + "/{uid}"):
            app.router.add_route("GET", "/portForward" + path, forwards.kubelet_port_forward)
            app.router.add_route("POST", "/portForward" + path, forwards.kubelet_port_forward)
        for path in (CONTAINER, CONTAINER_UID):
            app.router.add_route("GET", "/exec" + path, execs.kubelet_exec)
            app.router.add_route("POST", "/exec" + path, execs.kubelet_exec)
            app.router.add_route("GET", "/attach" + path, execs.kubelet_attach)
            app.router.add_route("POST", "/attach" + path, execs.kubelet_attach)
            app.router.add_route("POST", "/run" + path, execs.kubelet_run)
        app.router.add_get("/containerLogs" + CONTAINER, logs.kubelet_logs)
        app.router.add_get("/pods", self._pods)
        app.router.add_get("/pods/", self._pods)
        app.router.add_get("/healthz", self._healthz)
        self._runner = web.AppRunner(
            app, handle_signals=False, shutdown_timeout=1.0, access_log=None, handler_cancellation=True, **request_limits()
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.address, self.port, ssl_context=self.serving.context(self.workdir))
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        log.info("kubelet endpoint serving at https://%s:%d", self.address, self.port)

    async def _pods(self, request: web.Request) -> web.Response:
        body = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": self.kubelet.pods_here()}
        return web.Response(text=json.dumps(body), content_type="application/json")

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")
