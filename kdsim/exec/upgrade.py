"""`Upgrade: SPDY/3.1` on an aiohttp server: the stream-protocol handshake, the 101, and the connection taken over.

aiohttp upgrades only to WebSocket, so after writing the 101 this installs its own payload parser on the
connection (what WebSocketResponse does) and reads and writes the raw transport. A WebSocket carrying SPDY
frames in binary messages (kubectl 1.31+ port-forward) is the other Pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiohttp import WSMsgType, web

SPDY_31 = "SPDY/3.1"
PROTOCOL_HEADER = "X-Stream-Protocol-Version"
ACCEPTED_HEADER = "X-Accepted-Stream-Protocol-Versions"


def is_spdy(request: web.Request) -> bool:
    """A SPDY/3.1 upgrade request, as the kubelet's upgrader recognises one."""
    return (
        "upgrade" in request.headers.get("Connection", "").lower()
        and SPDY_31.lower() in request.headers.get("Upgrade", "").lower()
    )


def go_error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    """What Go's http.Error writes."""
    return web.Response(
        status=status,
        text=message + "\n",
        headers={"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff", **(headers or {})},
    )


def negotiate(request: web.Request, server: tuple[str, ...]) -> str | web.Response:
    """httpstream.Handshake: the first client protocol the server speaks, else the error the kubelet answers."""
    offered = [p.strip() for value in request.headers.getall(PROTOCOL_HEADER, []) for p in value.split(",") if p.strip()]
    if not offered:
        return go_error(400, f"unable to upgrade: {PROTOCOL_HEADER} is required")
    chosen = next((p for p in offered if p in server), None)
    if chosen is None:
        response = go_error(
            403,
            f"unable to upgrade: unable to negotiate protocol: client supports "
            f"[{' '.join(offered)}], server accepts [{' '.join(server)}]",
        )
        for protocol in server:
            response.headers.add(ACCEPTED_HEADER, protocol)
        return response
    return chosen


class _Feeder:
    """The payload parser aiohttp hands the upgraded connection's bytes to."""

    def __init__(self, queue: asyncio.Queue[bytes]) -> None:
        self.queue = queue

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self.queue.put_nowait(bytes(data))
        return False, b""

    def feed_eof(self) -> None:
        self.queue.put_nowait(b"")


class _SwitchingProtocols(web.StreamResponse):
    """The 101 answer; the body that follows belongs to the upgraded protocol."""

    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__(status=101, reason="Switching Protocols", headers=headers)
        self._length_check = False

    async def write_eof(self, data: bytes = b"") -> None:
        return None


class HijackedPipe:
    """The raw (TLS) connection of an upgraded request."""

    def __init__(self, request: web.Request, response: web.StreamResponse) -> None:
        self.request, self.response = request, response
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._eof = False

    def _take_over(self) -> None:
        protocol: Any = self.request.protocol
        protocol.set_parser(_Feeder(self._queue))
        protocol.keep_alive(False)

    async def read(self) -> bytes:
        if self._eof:
            return b""
        chunk = await self._queue.get()
        self._eof = not chunk
        return chunk

    async def write(self, data: bytes) -> None:
        transport = self.request.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError("the client closed the connection")
        transport.write(data)
        protocol: Any = self.request.protocol
        await protocol._drain_helper()

    async def close(self) -> None:
        transport = self.request.transport
        if transport is not None:
            transport.close()


async def switch(request: web.Request, protocol: str) -> HijackedPipe:
    """Answer 101 Switching Protocols (Upgrade: SPDY/3.1, the negotiated protocol) and take the connection."""
    response = _SwitchingProtocols(
        {"Connection": "Upgrade", "Upgrade": SPDY_31, **({PROTOCOL_HEADER: protocol} if protocol else {})}
    )
    response.force_close()
    await response.prepare(request)
    pipe = HijackedPipe(request, response)
    pipe._take_over()
    return pipe


class WebSocketPipe:
    """SPDY frames in the binary messages of a WebSocket (client-go's TunnelingConnection)."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self.ws = ws

    async def read(self) -> bytes:
        while True:
            msg = await self.ws.receive()
            if msg.type == WSMsgType.BINARY:
                if msg.data:
                    return bytes(msg.data)
                continue
            if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
                return b""

    async def write(self, data: bytes) -> None:
        await self.ws.send_bytes(data)

    async def close(self) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.ws.close()
