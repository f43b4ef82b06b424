"""A real aiohttp server on 127.0.0.1:0 in a background thread, and a tiny HTTP client for the tests."""

from __future__ import annotations

import asyncio
import http.client
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from aiohttp import web


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


class ServerThread:
    """Runs `app` on an ephemeral loopback port until stop()."""

    def __init__(self, app: web.Application) -> None:
        self.app = app
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup() if self._runner else asyncio.sleep(0))
        self._loop.close()

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def start(self) -> ServerThread:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("test server did not start within 10s")
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None, *, chunked: bool = False) -> Reply:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            if chunked:
                conn.putrequest(method, path)
                for key, value in (headers or {}).items():
                    conn.putheader(key, value)
                conn.putheader("Transfer-Encoding", "chunked")
                conn.endheaders()
                data = body or b""
                for i in range(0, len(data), 65536):
                    piece = data[i:i + 65536]
                    try:
                        conn.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    except OSError:  # the server may answer and close before reading everything
                        break
                try:
                    conn.send(b"0\r\n\r\n")
                except OSError:
                    pass
            else:
                conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            conn.close()


@pytest.fixture
def serve() -> Iterator[Callable[[web.Application], ServerThread]]:
    servers: list[ServerThread] = []

    def start(app: web.Application) -> ServerThread:
        server = ServerThread(app).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
