"""Port forwarding: pods/{name}/portforward of the embedded API server and the kubelet's /portForward path.

The protocol is portforward.k8s.io over SPDY/3.1 (kubectl 1.27-1.30, and 1.31+ when the WebSocket is
refused), or the same SPDY frames tunnelled in a WebSocket (`SPDY/3.1+portforward.k8s.io`, kubectl 1.31+).
Each forwarded connection is a pair of client-opened streams with one requestID: `error` and `data`.
Simulated pods share the node's network (as hostNetwork pods do), so a pod's port is the node's loopback
port: the pair is joined to 127.0.0.1:PORT (then [::1]:PORT), and when nothing listens the error stream
carries the refusal worded as the kubelet and containerd word it for a host-network pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from kdsim import errors
from kdsim.exec import spdy_conn, upgrade
from kdsim.exec.channels import STREAM_CREATION_TIMEOUT
from kdsim.exec.portforward import PROTOCOLS, TUNNEL_PROTOCOL
from kdsim.kubelet.exec_handler import status_response
from kdsim.kubelet.host import PodHost

log = logging.getLogger(__name__)


def sandbox_id(uid: str) -> str:
    """The pod sandbox id the runtime names in its messages (a 64-hex id, stable per pod)."""
    return hashlib.sha256(f"sandbox/{uid}".encode()).hexdigest()


def refused_message(port: int, sandbox: str, v4: OSError, v6: OSError) -> str:
    """The kubelet's error for a port nothing listens on, with containerd's host-network wording."""
    return (
        f"error forwarding port {port} to pod {sandbox}, uid : failed to execute portforward in network "
        f'namespace "host": failed to connect to localhost:{port} inside namespace "{sandbox}", '
        f"IPv4: dial tcp4 127.0.0.1:{port}: connect: {_go_errno(v4)} "
        f"IPv6 dial tcp6 [::1]:{port}: connect: {_go_errno(v6)} "
    )


def _go_errno(exc: OSError) -> str:
    """Go's text of the errno ("connection refused"); asyncio's own wording names the address instead."""
    text = os.strerror(exc.errno) if exc.errno else str(exc)
    return text[:1].lower() + text[1:]


def valid_stream(stream: spdy_conn.Stream) -> bool:
    """The kubelet rejects (resets) a stream without a port in 1-65535 or whose type is not error/data."""
    port = stream.header("port")
    return port.isdigit() and 0 < int(port) < 65536 and stream.header("streamType") in ("error", "data")


@dataclass
class _Pair:
    error: spdy_conn.Stream | None = None
    data: spdy_conn.Stream | None = None
    started: bool = field(default=False)


class Forwarder:
    """One port-forward connection: pairs the client's streams and joins each pair to the pod's port."""

    def __init__(self, pipe: spdy_conn.Pipe, sandbox: str) -> None:
        self.sandbox = sandbox
        self.pairs: dict[str, _Pair] = {}
        self.conn = spdy_conn.Connection(pipe, accept=valid_stream, on_stream=self._on_stream)
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        try:
            await self.conn.serve()
        finally:
            for task in list(self._tasks):
                task.cancel()
            await self.conn.close()

    def _on_stream(self, stream: spdy_conn.Stream) -> None:
        request_id = stream.header("requestID")
        if not request_id:  # a client older than request ids: the kubelet pairs by stream id
            request_id = str(stream.id if stream.header("streamType") == "error" else stream.id - 2)
        pair = self.pairs.get(request_id)
        if pair is None:
            pair = self.pairs[request_id] = _Pair()
            self._spawn(self._expire(request_id))
        if pair.started:
            return
        setattr(pair, stream.header("streamType"), stream)
        if pair.error is not None and pair.data is not None:
            pair.started = True
            self._spawn(self._forward(request_id, pair.error, pair.data))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _expire(self, request_id: str) -> None:
        await asyncio.sleep(STREAM_CREATION_TIMEOUT)
        pair = self.pairs.get(request_id)
        if pair is not None and not pair.started and pair.error is not None:
            await pair.error.write(f"(conn={id(self.conn):#x}, request={request_id}) timed out waiting for streams".encode())
            await pair.error.close()

    async def _forward(self, request_id: str, error: spdy_conn.Stream, data: spdy_conn.Stream) -> None:
        port = int(data.header("port"))
        try:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError as v4:
                try:
                    reader, writer = await asyncio.open_connection("::1", port)
                except OSError as v6:
                    await error.write(refused_message(port, self.sandbox, v4, v6).encode())
                    return
            upstream = asyncio.create_task(_to_pod(data, writer))
            try:
                while chunk := await reader.read(spdy_conn.CHUNK):
                    await data.write(chunk)
            except OSError:
                pass
            finally:
                upstream.cancel()
                writer.close()
        finally:
            await data.close()
            await error.close()
            self.pairs.pop(request_id, None)


async def _to_pod(data: spdy_conn.Stream, writer: asyncio.StreamWriter) -> None:
    """The client's bytes to the pod's port; its FIN half-closes the connection to the pod."""
    with contextlib.suppress(OSError):
        while chunk := await data.read():
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


class PortForwardHandler:
    """Serves port forwarding for pods of the simulated kubelet."""

    def __init__(self, kubelet: PodHost) -> None:
        self.kubelet = kubelet

    async def handle(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        """pods/{name}/portforward of the embedded API server: SPDY, or the WebSocket tunnel of SPDY."""
        return await self._serve(request, namespace, name, None, tunnel=True)

    async def kubelet_port_forward(self, request: web.Request) -> web.StreamResponse:
        """The kubelet's /portForward/{namespace}/{pod}[/{uid}] (what a real API server proxies to): SPDY only.
        The tunnel is kube-apiserver's (1.31+); a WebSocket offering it gets the 403 of a kubelet's WebSocket
        handshake, on which kubectl falls back to SPDY."""
        m = request.match_info
        return await self._serve(request, m["namespace"], m["pod"], m.get("uid"), tunnel=False)

    async def _serve(
        self, request: web.Request, namespace: str, name: str, uid: str | None, *, tunnel: bool
    ) -> web.StreamResponse:
        pod = self.kubelet.pod(namespace, name)
        if pod is None or (uid and (pod.get("metadata") or {}).get("uid") != uid):
            return upgrade.go_error(404, "pod does not exist")
        sandbox = sandbox_id(str((pod.get("metadata") or {}).get("uid") or f"{namespace}/{name}"))
        if upgrade.is_spdy(request):
            chosen = upgrade.negotiate(request, PROTOCOLS)
            if isinstance(chosen, web.Response):
                return chosen
            pipe = await upgrade.switch(request, chosen)
            await Forwarder(pipe, sandbox).run()
            return pipe.response
        ws = web.WebSocketResponse(protocols=(TUNNEL_PROTOCOL,), autoping=True)
        if not tunnel and ws.can_prepare(request).ok:
            return web.Response(status=403)
        if ws.can_prepare(request).ok and TUNNEL_PROTOCOL in _offered(request):
            await ws.prepare(request)
            await Forwarder(upgrade.WebSocketPipe(ws), sandbox).run()
            return ws
        return status_response(errors.bad_request("Upgrade request required"))


def _offered(request: web.Request) -> list[str]:
    return [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
