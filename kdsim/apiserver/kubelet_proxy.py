"""pods/{name}/exec, attach, portforward and log proxied to the pod's node's kubelet endpoint, as a real API server does.

Used when no simulated kubelet runs in process (`sim serve --no-controllers` with `gitops-kd sim node`
joined): the Node's InternalIP and `status.daemonEndpoints.kubeletEndpoint.Port` name the kubelet, whose
/exec, /attach and /containerLogs paths get the request. Like kube-apiserver started without
--kubelet-certificate-authority, the kubelet's serving cert is not verified.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import WSMsgType, web
from yarl import URL

from kdsim import errors
from kdsim.exec import portforward, spdy_conn, upgrade

# the client's stream flags (pods/{name}/exec) -> the kubelet's (its /exec and /attach), as kube-apiserver maps them
STREAM_FLAGS = {"stdin": "input", "stdout": "output", "stderr": "error", "tty": "tty"}
LOG_OPTIONS = ("follow", "previous", "sinceSeconds", "sinceTime", "timestamps", "tailLines", "limitBytes")


def resolve_container(pod: Mapping[str, Any], name: str, container: str) -> str:
    """The container named by the request, or the pod's only one; 400 as kube-apiserver words it."""
    spec = pod.get("spec") or {}
    containers = [c["name"] for c in spec.get("containers") or []]
    if not container:
        if len(containers) != 1:
            raise errors.bad_request(f"a container name must be specified for pod {name}, choose one of: "
                                     f"[{' '.join(containers)}]")
        return containers[0]
    every = containers + [c["name"] for c in spec.get("initContainers") or []]
    every += [c["name"] for c in spec.get("ephemeralContainers") or []]
    if container not in every:
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    return container


def kubelet_url(node: Mapping[str, Any] | None, node_name: str) -> str:
    """https://<InternalIP>:<kubelet port> of a Node; 500 naming what is missing, as a real server fails."""
    if node is None:
        raise errors.internal(f'nodes "{node_name}" not found')
    status = node.get("status") or {}
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    address = next((a.get("address") for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), None)
    if not address:
        raise errors.internal(f'no preferred addresses found; known addresses: {status.get("addresses") or []}')
    if not port:
        raise errors.internal(f"node {node_name} has no kubelet endpoint port (status.daemonEndpoints)")
    return f"https://{address}:{port}"


def stream_query(query: Mapping[str, str], commands: list[str], *, defaults: bool = True) -> str:
    """The kubelet's query: each command, and each stream the client asked for as input/output/error/tty=1."""
    params: list[tuple[str, str]] = [("command", c) for c in commands]
    for flag, kubelet_flag in STREAM_FLAGS.items():
        value = query.get(flag)
        on = (defaults and flag in ("stdout", "stderr")) if value is None else value.lower() in ("1", "true")
        if on:
            params.append((kubelet_flag, "1"))
    return urlencode(params)


async def proxy_logs(request: web.Request, base: str, namespace: str, pod: str, container: str) -> web.StreamResponse:
    """GET <kubelet>/containerLogs/ns/pod/container with the log options, streamed back."""
    query = urlencode([(k, v) for k, v in request.query.items() if k in LOG_OPTIONS])
    url = f"{base}/containerLogs/{namespace}/{pod}/{container}" + (f"?{query}" if query else "")
    async with aiohttp.ClientSession() as session:
        try:
            async with session.get(url, ssl=False) as answer:
                out = web.StreamResponse(status=answer.status, headers={
                    "Content-Type": answer.headers.get("Content-Type", "text/plain")})
                await out.prepare(request)
                async for chunk in answer.content.iter_any():
                    await out.write(chunk)
                await out.write_eof()
                return out
        except aiohttp.ClientError as exc:
            raise _unreachable(exc) from None


async def proxy_stream(request: web.Request, base: str, subresource: str, namespace: str, pod: str,
                       container: str) -> web.StreamResponse:
    """exec/attach: the client's WebSocket relayed frame by frame to <kubelet>/{exec,attach}/ns/pod/container
    (a SPDY upgrade is relayed as bytes)."""
    commands = request.query.getall("command", []) if subresource == "exec" else []
    path = f"/{subresource}/{namespace}/{pod}/{container}?{stream_query(request.query, commands)}"
    if upgrade.is_spdy(request):
        return await proxy_upgrade(request, base, path)
    if not web.WebSocketResponse(protocols=_offered(request)).can_prepare(request).ok:
        raise errors.bad_request("Upgrade request required")
    url = base + path
    async with aiohttp.ClientSession() as session:
        try:
            kubelet_ws = await session.ws_connect(url, ssl=False, protocols=_offered(request), autoping=True)
        except aiohttp.WSServerHandshakeError as exc:
            body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": exc.message, "code": exc.status}
            return web.Response(status=exc.status, text=json.dumps(body), content_type="application/json")
        except aiohttp.ClientError as exc:
            raise _unreachable(exc) from None
        # answer the client with the subprotocol the kubelet chose
        server_ws = web.WebSocketResponse(protocols=(kubelet_ws.protocol,) if kubelet_ws.protocol else (),
                                          autoping=True)
        await server_ws.prepare(request)
        async with kubelet_ws:
            pumps = [asyncio.create_task(_relay(kubelet_ws, server_ws)),
                     asyncio.create_task(_relay(server_ws, kubelet_ws))]
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            with contextlib.suppress(asyncio.TimeoutError):  # the rest of the kubelet's frames, then close
                await asyncio.wait_for(pumps[0], 5)
            for task in pumps:
                task.cancel()
            await server_ws.close()
    return server_ws


async def proxy_port_forward(request: web.Request, base: str, namespace: str, pod: str) -> web.StreamResponse:
    """pods/{name}/portforward to <kubelet>/portForward/ns/pod: SPDY relayed, or the WebSocket tunnel of SPDY
    (`SPDY/3.1+portforward.k8s.io`) translated to a SPDY upgrade, as kube-apiserver 1.31+ does."""
    path = f"/portForward/{namespace}/{pod}"
    if upgrade.is_spdy(request):
        return await proxy_upgrade(request, base, path)
    tunnel = web.WebSocketResponse(protocols=(portforward.TUNNEL_PROTOCOL,), autoping=True)
    if tunnel.can_prepare(request).ok and tunnel.can_prepare(request).protocol:
        return await proxy_upgrade(request, base, path, tunnel=tunnel)
    raise errors.bad_request("Upgrade request required")


def _offered(request: web.Request) -> tuple[str, ...]:
    header = request.headers.get("Sec-WebSocket-Protocol", "")
    return tuple(p.strip() for p in header.split(",") if p.strip())


async def _relay(source: Any, target: Any) -> None:
    async for msg in source:
        if target.closed:
            return
        if msg.type == WSMsgType.BINARY:
            await target.send_bytes(msg.data)
        elif msg.type == WSMsgType.TEXT:
            await target.send_str(msg.data)
    with contextlib.suppress(ConnectionError, RuntimeError):
        if not target.closed:
            await target.close()


def _unreachable(exc: Exception) -> errors.ApiError:
    return errors.internal(f"error dialing backend: {exc}")


async def proxy_upgrade(request: web.Request, base: str, path: str, *,
                        tunnel: web.WebSocketResponse | None = None) -> web.StreamResponse:
    """A SPDY/3.1 upgrade relayed to the kubelet, as kube-apiserver's UpgradeAwareHandler does: the request
    replayed to <kubelet>/path, a non-101 answer passed back, else the bytes copied both ways. With `tunnel`
    (kubectl 1.31+ port-forward) the client's side is that WebSocket, whose binary messages carry the SPDY
    frames, accepted with the protocol the kubelet chose."""
    url = URL(base)
    offered = request.headers.getall(upgrade.PROTOCOL_HEADER, []) if tunnel is None else list(portforward.PROTOCOLS)
    head = [f"POST {path} HTTP/1.1", f"Host: {url.host}:{url.port}", "Connection: Upgrade",
            f"Upgrade: {upgrade.SPDY_31}", "Content-Length: 0",
            *(f"{upgrade.PROTOCOL_HEADER}: {p}" for p in offered)]
    ssl_ctx = ssl.create_default_context()
    ssl_ctx.check_hostname, ssl_ctx.verify_mode = False, ssl.CERT_NONE
    try:
        reader, writer = await asyncio.open_connection(url.host, url.port, ssl=ssl_ctx)
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        status, headers = _response_head(await reader.readuntil(b"\r\n\r\n"))
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
        raise _unreachable(exc) from None
    if status != 101:
        length = int(headers.get("content-length", "0") or 0)
        body = await reader.readexactly(length) if length else b""
        writer.close()
        return web.Response(status=status, body=body, headers={"Content-Type": headers.get(
            "content-type", "text/plain; charset=utf-8")})
    chosen = headers.get(upgrade.PROTOCOL_HEADER.lower(), "")
    client: spdy_conn.Pipe
    response: web.StreamResponse
    if tunnel is not None:
        await tunnel.prepare(request)
        client, response = upgrade.WebSocketPipe(tunnel), tunnel
    else:
        hijacked = await upgrade.switch(request, chosen)
        client, response = hijacked, hijacked.response
    pumps = [asyncio.create_task(_from_kubelet(reader, client)), asyncio.create_task(_to_kubelet(client, writer))]
    await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
    for task in pumps:
        task.cancel()
    writer.close()
    await client.close()
    return response


def _response_head(raw: bytes) -> tuple[int, dict[str, str]]:
    lines = raw.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return status, headers


async def _from_kubelet(reader: asyncio.StreamReader, client: spdy_conn.Pipe) -> None:
    with contextlib.suppress(OSError, RuntimeError):
        while chunk := await reader.read(65536):
            await client.write(chunk)


async def _to_kubelet(client: spdy_conn.Pipe, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, RuntimeError):
        while chunk := await client.read():
            writer.write(chunk)
            await writer.drain()
