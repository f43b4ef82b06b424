"""Upgrades relayed to a kubelet endpoint: SPDY/3.1 (exec, attach, port-forward of kubectl < 1.30/1.31) as bytes,
and port-forward's WebSocket tunnel of SPDY (kubectl 1.31+) translated into a SPDY upgrade, as kube-apiserver's
UpgradeAwareHandler and its 1.31+ tunnelling handler do. The kubelet's serving cert is not verified."""

from __future__ import annotations

import asyncio
import contextlib
import ssl

from aiohttp import web
from yarl import URL

from kdsim import errors
from kdsim.exec import portforward, spdy_conn, upgrade


def unreachable(exc: Exception) -> errors.ApiError:
    return errors.internal(f"error dialing backend: {exc}")


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


async def proxy_upgrade(
    request: web.Request, base: str, path: str, *, tunnel: web.WebSocketResponse | None = None
) -> web.StreamResponse:
    """A SPDY/3.1 upgrade relayed to the kubelet, as kube-apiserver's UpgradeAwareHandler does: the request
    replayed to <kubelet>/path, a non-101 answer passed back, else the bytes copied both ways. With `tunnel`
    (kubectl 1.31+ port-forward) the client's side is that WebSocket, whose binary messages carry the SPDY
    frames, accepted with the protocol the kubelet chose."""
    url = URL(base)
    offered = request.headers.getall(upgrade.PROTOCOL_HEADER, []) if tunnel is None else list(portforward.PROTOCOLS)
    head = [
        f"POST {path} HTTP/1.1",
        f"Host: {url.host}:{url.port}",
        "Connection: Upgrade",
        f"Upgrade: {upgrade.SPDY_31}",
        "Content-Length: 0",
        *(f"{upgrade.PROTOCOL_HEADER}: {p}" for p in offered),
    ]
    ssl_ctx = ssl.create_default_context()
    ssl_ctx.check_hostname, ssl_ctx.verify_mode = False, ssl.CERT_NONE
    try:
        reader, writer = await asyncio.open_connection(url.host, url.port, ssl=ssl_ctx)
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        status, headers = _response_head(await reader.readuntil(b"\r\n\r\n"))
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
        raise unreachable(exc) from None
    if status != 101:
        length = int(next((v for n, v in headers if n == "content-length"), "0") or 0)
        body = await reader.readexactly(length) if length else b""
        writer.close()
        answer = web.Response(status=status, body=body)
        for name, value in headers:
            if name in ("content-type", upgrade.ACCEPTED_HEADER.lower()):
                answer.headers.add(name, value)
        return answer
    chosen = next((v for n, v in headers if n == upgrade.PROTOCOL_HEADER.lower()), "")
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


def _response_head(raw: bytes) -> tuple[int, list[tuple[str, str]]]:
    """The status code and the (lower-cased name, value) headers of an HTTP/1.1 response head."""
    lines = raw.decode("latin-1").split("\r\n")
    headers = [
        (name.strip().lower(), value.strip()) for name, _, value in (line.partition(":") for line in lines[1:] if ":" in line)
    ]
    return int(lines[0].split(" ")[1]), headers


async def _from_kubelet(reader: asyncio.StreamReader, client: spdy_conn.Pipe) -> None:
    with contextlib.suppress(OSError, RuntimeError):
        while chunk := await reader.read(65536):
            await client.write(chunk)


async def _to_kubelet(client: spdy_conn.Pipe, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, RuntimeError):
        while chunk := await client.read():
            writer.write(chunk)
            await writer.drain()
