"""The exec/attach session's channels over either transport: WebSocket (channel.k8s.io protocols) or SPDY/3.1.

Both give the handler the same three operations: send stdout/stderr, iterate the client's input (stdin
chunks, then a CLOSE frame for channel 0 when the client ends stdin), and finish with the status on the
error channel. Over SPDY each channel is a stream the client opened with a `streamType` header, and the
session starts once the streams the request asked for are there (the kubelet's waitForStreams).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, Protocol

from aiohttp import WSMsgType, web

from kdsim.exec import protocol, spdy_conn, upgrade

log = logging.getLogger(__name__)

# the remotecommand protocols the kubelet speaks over SPDY, most preferred first
SPDY_PROTOCOLS = ("v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
STREAM_TYPES = {
    "stdin": protocol.STDIN,
    "stdout": protocol.STDOUT,
    "stderr": protocol.STDERR,
    "error": protocol.ERROR,
    "resize": protocol.RESIZE,
}
STREAM_CREATION_TIMEOUT = 30.0  # the kubelet's default --streaming-connection... stream creation timeout


class Channels(Protocol):
    @property
    def response(self) -> web.StreamResponse: ...

    async def send(self, channel: int, data: bytes) -> None: ...

    def input(self) -> AsyncIterator[protocol.Frame]: ...

    async def finish(self, status: dict[str, Any]) -> None: ...


class WebSocketChannels:
    def __init__(self, ws: web.WebSocketResponse) -> None:
        self.response = self.ws = ws
        self.proto = ws.ws_protocol or protocol.V1

    async def send(self, channel: int, data: bytes) -> None:
        if self.ws.closed:
            return
        message = protocol.encode(self.proto, channel, data)
        with contextlib.suppress(ConnectionError, RuntimeError):
            if isinstance(message, str):
                await self.ws.send_str(message)
            else:
                await self.ws.send_bytes(message)

    async def input(self) -> AsyncIterator[protocol.Frame]:
        async for msg in self.ws:
            if msg.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
                continue
            frame = protocol.decode(self.proto, msg.data)
            if frame is None or (frame.channel == protocol.CLOSE and self.proto != protocol.V5):
                continue
            yield frame

    async def finish(self, status: dict[str, Any]) -> None:
        await self.send(protocol.ERROR, protocol.error_payload(self.proto, status))
        await self.ws.close()


class SpdyChannels:
    def __init__(
        self,
        response: web.StreamResponse,
        conn: spdy_conn.Connection,
        proto: str,
        streams: dict[int, spdy_conn.Stream],
        serving: asyncio.Task[None],
    ) -> None:
        self.response, self.conn, self.proto, self.streams, self._serving = response, conn, proto, streams, serving

    async def send(self, channel: int, data: bytes) -> None:
        stream = self.streams.get(channel)
        if stream is not None:
            await stream.write(data)

    async def input(self) -> AsyncIterator[protocol.Frame]:
        stdin = self.streams.get(protocol.STDIN)
        if stdin is not None:
            while chunk := await stdin.read():
                yield protocol.Frame(protocol.STDIN, chunk)
            if not self.conn.done.is_set():
                yield protocol.Frame(protocol.CLOSE, bytes([protocol.STDIN]))
        await self.conn.done.wait()  # then, like a WebSocket's messages, input ends when the client leaves

    async def finish(self, status: dict[str, Any]) -> None:
        error = self.streams.get(protocol.ERROR)
        if error is not None:
            payload = protocol.error_payload(protocol.V4 if self.proto == SPDY_PROTOCOLS[0] else protocol.V1, status)
            if payload:
                await error.write(payload)
        for stream in self.streams.values():
            await stream.close()
        await self.conn.close()
        self._serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._serving


def expected_streams(streams: dict[str, bool], proto: str) -> int:
    """The error stream, one per requested stream (no stderr with a tty), resize with a tty from v3 on."""
    count = 1 + sum(1 for name in ("stdin", "stdout") if streams[name])
    count += 1 if streams["stderr"] and not streams["tty"] else 0
    return count + (1 if streams["tty"] and proto in SPDY_PROTOCOLS[:2] else 0)


async def open_spdy(request: web.Request, streams: dict[str, bool]) -> SpdyChannels | web.StreamResponse:
    """Negotiate, switch to SPDY/3.1 and wait for the client's streams; a plain response when that fails."""
    chosen = upgrade.negotiate(request, SPDY_PROTOCOLS)
    if isinstance(chosen, web.Response):
        return chosen
    pipe = await upgrade.switch(request, chosen)
    by_channel: dict[int, spdy_conn.Stream] = {}
    arrived = asyncio.Event()
    wanted = expected_streams(streams, chosen)

    def on_stream(stream: spdy_conn.Stream) -> None:
        channel = STREAM_TYPES.get(stream.header("streamType"))
        if channel is None:
            log.info("unexpected stream type: %r", stream.header("streamType"))
            return
        by_channel[channel] = stream
        if len(by_channel) >= wanted:
            arrived.set()

    conn = spdy_conn.Connection(pipe, accept=lambda _s: True, on_stream=on_stream)
    serving = asyncio.create_task(conn.serve())
    if not await spdy_conn.wait_or_done(conn, arrived.wait(), STREAM_CREATION_TIMEOUT):
        log.info("timed out waiting for client to create streams")
        await conn.close()
        serving.cancel()
        return pipe.response
    if protocol.RESIZE in by_channel:  # sizes are read and dropped: the simulated tty has no size
        asyncio.create_task(_drain(by_channel.pop(protocol.RESIZE)))
    return SpdyChannels(pipe.response, conn, chosen, by_channel, serving)


async def _drain(stream: spdy_conn.Stream) -> None:
    while await stream.read():
        pass
