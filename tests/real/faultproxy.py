"""FaultProxy: a TLS proxy in front of the real kube-apiserver for one client (the controller under test). It counts
the write and exec requests it sees and, by the embedded cluster's fault rules (kdsim FaultInjector), answers one
with a 500 or 409 instead of forwarding it, or holds it, then 504, as the embedded API server does. Everything
else goes through byte for byte: bodies, watch streams, and exec's connection upgrade."""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from pathlib import Path
from types import TracebackType

from kdsim.apiserver.faults import FaultInjector, error_for

WRITE_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
REASONS = {409: "Conflict", 500: "Internal Server Error", 504: "Gateway Timeout"}


def classify(method: str, target: str) -> tuple[str, str, str, str]:
    """(verb, resource as the fault rules name it: plural or plural/subresource, object name, API group) of a
    request, as kube-apiserver's request info reads its path."""
    path = target.split("?", 1)[0].strip("/").split("/")
    group, rest = ("", path[2:]) if path[:1] == ["api"] else ("/".join(path[1:2]), path[3:])
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]  # a namespaced object; /namespaces/NAME alone is the namespace itself
    plural, name, sub = (rest + ["", "", ""])[:3]
    resource = f"{plural}/{sub}" if sub else plural
    verb = WRITE_VERBS.get(method, "get")
    if verb == "delete" and not name:
        verb = "deletecollection"
    return verb, resource, name, group


class FaultProxy:
    """Listens on a free loopback port (`server`) with `cert`/`key`, forwards to `upstream` trusting `ca`.
    `faults` takes the rules; `writes` counts the write and exec requests seen (Lease requests not counted);
    `injected` names each request answered with a fault ("conflict patch statefulsets/NAME").
    One asyncio loop in a thread of its own serves every connection; `stop()` closes them all."""

    def __init__(self, upstream: tuple[str, int], ca: Path, cert: Path, key: Path) -> None:
        self.upstream = upstream
        self.faults = FaultInjector()
        self.writes = 0
        self.injected: list[str] = []
        self.server = ""
        self._server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._server_ctx.load_cert_chain(str(cert), str(key))
        self._server_ctx.set_alpn_protocols(["http/1.1"])
        self._client_ctx = ssl.create_default_context(cafile=str(ca))
        self._client_ctx.set_alpn_protocols(["http/1.1"])
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)
        self._listener: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        self._listener = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._connection, "127.0.0.1", 0, ssl=self._server_ctx), self._loop
        ).result(30)
        self.server = f"https://127.0.0.1:{self._listener.sockets[0].getsockname()[1]}"
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop listening, end held requests, close every connection and the loop's thread."""
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()

    async def _shutdown(self) -> None:
        if self._listener is not None:
            self._listener.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        up_writer: asyncio.StreamWriter | None = None
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream, ssl=self._client_ctx)
            back = asyncio.ensure_future(_pipe(up_reader, writer))
            try:
                await self._requests(reader, writer, up_writer)
            finally:
                back.cancel()
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # a client or upstream that went away, or stop(): the connection ends
        finally:
            for w in (writer, up_writer):
                if w is not None:
                    w.close()
            self._tasks.discard(task)

    async def _requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        """Each request of the connection in turn (HTTP/1.1, no pipelining): forwarded, or answered with a fault."""
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return  # the client closed
            lines = head.decode("latin-1").split("\r\n")
            method, target = lines[0].split(" ")[:2]
            headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in lines[1:] if ":" in h)}
            if "chunked" in headers.get("transfer-encoding", ""):
                raise ValueError("a chunked request body is not proxied")
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            verb, resource, name, group = classify(method, target)
            exec_ = resource == "pods/exec"
            if (verb != "get" or exec_) and resource != "leases":
                self.writes += 1
            rule = self.faults.take(verb, resource)
            if rule is not None:
                self.injected.append(f"{rule.kind} {verb} {resource}/{name}")
                if rule.kind == "timeout":
                    await asyncio.sleep(rule.delay)
                error = error_for(rule, resource.split("/")[0], name, group)
                data = json.dumps(error.to_status()).encode()
                writer.write(
                    f"HTTP/1.1 {error.code} {REASONS.get(error.code, 'Error')}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
                if exec_:
                    return  # an upgrade refused: the connection ends
                continue
            upstream.write(head + body)
            await upstream.drain()
            if "upgrade" in headers.get("connection", "").lower():
                await _pipe(reader, upstream)  # exec: raw bytes both ways from now on
                return


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy `source` to `sink` until `source` ends, then close `sink`."""
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    except OSError:
        pass
    finally:
        sink.close()
