"""A real aiohttp webhook receiver on 127.0.0.1:0 in a background thread, scripted with status codes."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from aiohttp import web


class Receiver:
    """Answers each POST with the next status of ``script`` (then 200), recording every body and time."""

    def __init__(self, script: list[int] | None = None) -> None:
        self.script = list(script or [])
        self.bodies: list[Any] = []
        self.times: list[float] = []
        self.statuses: list[int] = []
        self.paths: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="webhook-receiver")
        self.url = ""
        self._runner: web.AppRunner | None = None

    def __enter__(self) -> Receiver:
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("receiver did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def wait(self, count: int, timeout: float = 10.0) -> list[Any]:
        deadline = time.monotonic() + timeout
        while len(self.bodies) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"receiver got {len(self.bodies)} POSTs, wanted {count}")
            time.sleep(0.01)
        return self.bodies

    async def _handle(self, request: web.Request) -> web.Response:
        self.times.append(time.monotonic())
        self.paths.append(request.path)
        self.bodies.append(json.loads(await request.read()))
        status = self.script.pop(0) if self.script else 200
        self.statuses.append(status)
        return web.Response(status=status, text="ok" if status < 400 else "nope")

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)  # /hook, and /api/v2/alerts for an Alertmanager
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/hook"
        self._started.set()
        self._loop.run_forever()
