"""pods/{name}/exec, attach and log proxied to the pod's node's kubelet endpoint, as a real API server does.

Used when no simulated kubelet runs in process (`sim serve --no-controllers` with `gitops-kd sim node`
joined): the Node's InternalIP and `status.daemonEndpoints.kubeletEndpoint.Port` name the kubelet, whose
/exec, /attach and /containerLogs paths get the request. Like kube-apiserver started without
--kubelet-certificate-authority, the kubelet's serving cert is not verified.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import urlencode

import aiohttp
from aiohttp import WSMsgType, web

from kdsim import errors
from kdsim.apiserver import upgrade_proxy
from kdsim.apiserver.upgrade_proxy import unreachable
from kdsim.exec import upgrade

# the client's stream flags (pods/{name}/exec) -> the kubelet's (its /exec and /attach), as kube-apiserver maps them
STREAM_FLAGS = {"stdin": "input", "stdout": "output", "stderr": "error", "tty": "tty"}
LOG_OPTIONS = ("follow", "previous", "sinceSeconds", "sinceTime", "timestamps", "tailLines", "limitBytes")


def resolve_container(pod: Mapping[str, Any], name: str, container: str) -> str:
    """The container named by the request, or the pod's only one; 400 as kube-apiserver words it."""
    spec = pod.get("spec") or {}
    containers = [c["name"] for c in spec.get("containers") or []]
    if not container:
        if len(containers) != 1:
            raise errors.bad_request(
                f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
            )
        return cast(str, containers[0])
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
        raise errors.internal(f"no preferred addresses found; known addresses: {status.get('addresses') or []}")
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
                out = web.StreamResponse(
                    status=answer.status, headers={"Content-Type": answer.headers.get("Content-Type", "text/plain")}
                )
                await out.prepare(request)
                async for chunk in answer.content.iter_any():
                    await out.write(chunk)
                await out.write_eof()
                return out
        except aiohttp.ClientError as exc:
            raise unreachable(exc) from None


async def proxy_stream(
    request: web.Request, base: str, subresource: str, namespace: str, pod: str, container: str
) -> web.StreamResponse:
    """exec/attach: the client's WebSocket relayed frame by frame to <kubelet>/{exec,attach}/ns/pod/container
    (a SPDY upgrade is relayed as bytes)."""
    commands = request.query.getall("command", []) if subresource == "exec" else []
    path = f"/{subresource}/{namespace}/{pod}/{container}?{stream_query(request.query, commands)}"
    if upgrade.is_spdy(request):
        return await upgrade_proxy.proxy_upgrade(request, base, path)
    if not web.WebSocketResponse(protocols=_offered(request)).can_prepare(request).ok:
        raise errors.bad_request("Upgrade request required")
    url = base + path
    async with aiohttp.ClientSession() as session:
        try:
            kubelet_ws = await session.ws_connect(url, ssl=False, protocols=_offered(request), autoping=True)
        except aiohttp.WSServerHandshakeError as exc:
            body = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": exc.message,
                "code": exc.status,
            }
            return web.Response(status=exc.status, text=json.dumps(body), content_type="application/json")
        except aiohttp.ClientError as exc:
            raise unreachable(exc) from None
        # answer the client with the subprotocol the kubelet chose
        server_ws = web.WebSocketResponse(protocols=(kubelet_ws.protocol,) if kubelet_ws.protocol else (), autoping=True)
        await server_ws.prepare(request)
        async with kubelet_ws:
            pumps = [asyncio.create_task(_relay(kubelet_ws, server_ws)), asyncio.create_task(_relay(server_ws, kubelet_ws))]
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            with contextlib.suppress(asyncio.TimeoutError):  # the rest of the kubelet's frames, then close
                await asyncio.wait_for(pumps[0], 5)
            for task in pumps:
                task.cancel()
            await server_ws.close()
    return server_ws


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
