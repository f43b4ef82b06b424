"""The server side of a SPDY/3.1 streaming connection (what spdystream does in the kubelet), over any byte pipe.

The client opens every stream (SYN_STREAM with its headers); `accept` decides, then the stream gets a SYN_REPLY
or a RST_STREAM. Data frames go to the stream's queue, FIN ends its input; PINGs are echoed; GOAWAY or the end of
the pipe ends the connection. Writes are serialised (the header compressor is one zlib stream per connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from kdsim.exec import spdy

log = logging.getLogger(__name__)

CHUNK = 32 * 1024  # the largest data frame sent


class Pipe(Protocol):
    """The byte stream under the connection: a hijacked HTTP connection or a WebSocket tunnel."""

    async def read(self) -> bytes:
        """The next bytes; b"" once the peer is gone."""
        ...

    async def write(self, data: bytes) -> None: ...

    async def close(self) -> None: ...


class Stream:
    """One client-opened stream: its headers, what the client sent, and our half."""

    def __init__(self, conn: Connection, stream_id: int, headers: dict[str, list[str]]) -> None:
        self.conn, self.id, self.headers = conn, stream_id, headers
        self._inbound: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.closed = False  # our half (FIN sent or reset)

    def header(self, name: str) -> str:
        return (self.headers.get(name.lower()) or [""])[0]

    async def read(self) -> bytes:
        """The next chunk the client sent; b"" after its FIN (or a reset, or the connection's end)."""
        chunk = await self._inbound.get()
        if chunk is None:
            self._inbound.put_nowait(None)  # stays at end
            return b""
        return chunk

    async def write(self, data: bytes) -> None:
        for start in range(0, len(data), CHUNK):
            if self.closed:
                return
            await self.conn.send(spdy.data(self.id, data[start : start + CHUNK]))

    async def close(self) -> None:
        """FIN our half (an empty data frame with the FIN flag), as spdystream's Close does."""
        if not self.closed:
            self.closed = True
            await self.conn.send(spdy.data(self.id, b"", fin=True))

    def _received(self, chunk: bytes | None) -> None:
        self._inbound.put_nowait(chunk)


Accept = Callable[[Stream], bool]


class Connection:
    """Serves one upgraded connection: call `serve()` and use the streams `on_stream` is given."""

    def __init__(self, pipe: Pipe, *, accept: Accept, on_stream: Callable[[Stream], None]) -> None:
        self.pipe = pipe
        self.accept, self.on_stream = accept, on_stream
        self.codec = spdy.HeaderCodec()
        self.streams: dict[int, Stream] = {}
        self.done = asyncio.Event()  # the client went away, sent GOAWAY, or spoke something else
        self._lock = asyncio.Lock()
        self._last_id = 0
        self._gone = False

    async def send(self, frame: bytes | Callable[[], bytes]) -> None:
        """Write one frame (a callable is encoded under the lock: header blocks share the compressor)."""
        async with self._lock:
            if self._gone:
                return
            try:
                await self.pipe.write(frame() if callable(frame) else frame)
            except (ConnectionError, RuntimeError, OSError):
                self._gone = True
                self.done.set()

    async def serve(self) -> None:
        """Read frames until the client is gone; then every stream's input ends."""
        buffer = spdy.Buffer()
        try:
            while not self._gone:
                chunk = await self.pipe.read()
                if not chunk:
                    break
                for frame in buffer.feed(chunk):
                    if not await self._handle(frame):
                        return
        except spdy.SpdyError as exc:
            log.info("closing a SPDY connection: %s", exc)
        finally:
            for stream in self.streams.values():
                stream._received(None)
            self.done.set()

    async def _handle(self, frame: spdy.Control | spdy.Data) -> bool:
        if isinstance(frame, spdy.Data):
            stream = self.streams.get(frame.stream_id)
            if stream is not None:
                if frame.data:
                    stream._received(frame.data)
                if frame.fin:
                    stream._received(None)
            return True
        if frame.kind == spdy.SYN_STREAM:
            stream_id, headers = spdy.syn_stream_of(self.codec, frame)
            self._last_id = max(self._last_id, stream_id)
            stream = Stream(self, stream_id, headers)
            if not self.accept(stream):
                await self.send(spdy.rst_stream(stream_id, spdy.REFUSED_STREAM))
                return True
            self.streams[stream_id] = stream
            if frame.flags & spdy.FLAG_FIN:
                stream._received(None)
            await self.send(lambda: spdy.syn_reply(self.codec, stream_id))
            self.on_stream(stream)
        elif frame.kind == spdy.RST_STREAM:
            reset = self.streams.pop(spdy.stream_id_of(frame), None)
            if reset is not None:
                reset.closed = True
                reset._received(None)
        elif frame.kind == spdy.PING:
            await self.send(spdy.control(spdy.PING, frame.payload))
        elif frame.kind == spdy.GOAWAY:
            return False
        return True  # SETTINGS, WINDOW_UPDATE, HEADERS: nothing to do (spdystream keeps no flow control)

    async def close(self) -> None:
        """GOAWAY, then close the pipe (what spdystream's Close ends with)."""
        await self.send(spdy.goaway(self._last_id))
        async with self._lock:
            self._gone = True
            with contextlib.suppress(ConnectionError, RuntimeError, OSError):
                await self.pipe.close()
        self.done.set()


async def wait_or_done(conn: Connection, waiter: Awaitable[object], timeout: float) -> bool:
    """Wait for `waiter` unless the connection ends or `timeout` passes first; True when it completed."""
    task = asyncio.ensure_future(waiter)
    gone = asyncio.ensure_future(conn.done.wait())
    try:
        finished, _ = await asyncio.wait({task, gone}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:  # also when the handler itself is cancelled (the client went away)
        for pending in (task, gone):
            if not pending.done():
                pending.cancel()
    return task in finished and not task.cancelled()
