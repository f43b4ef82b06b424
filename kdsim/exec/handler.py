"""GET/POST pods/{name}/exec: validate like the apiserver, upgrade to WebSocket, stream a chroot-run command."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

from kdsim import errors
from kdsim.exec import protocol
from kdsim.kubelet import runner

if TYPE_CHECKING:
    from kdsim.controllers.kubelet import Kubelet

log = logging.getLogger(__name__)


def _status_response(err: errors.ApiError) -> web.Response:
    return web.Response(status=err.code, text=json.dumps(err.to_status()), content_type="application/json")


def _flag(query: Any, key: str, default: bool) -> bool:
    value = query.get(key)
    return default if value is None else value.lower() in ("1", "true", "yes")


class ExecHandler:
    """Serves the exec subresource for pods of the simulated kubelet."""

    def __init__(self, kubelet: Kubelet) -> None:
        self.kubelet = kubelet

    def _validate(self, request: web.Request, namespace: str, name: str) -> tuple[str, list[str]]:
        pod = self.kubelet.cluster.store.get("v1", "pods", namespace, name)
        if pod is None:
            raise errors.not_found("pods", name)
        query = request.query
        command = query.getall("command", [])
        containers = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
        container = query.get("container") or ""
        if not container:
            if len(containers) != 1:
                raise errors.bad_request(f"a container name must be specified for pod {name}, choose one of: "
                                         f"[{' '.join(containers)}]")
            container = containers[0]
        inits = [c["name"] for c in (pod.get("spec") or {}).get("initContainers") or []]
        if container not in containers and container not in inits:
            raise errors.bad_request(f"container {container} is not valid for pod {name}")
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            raise errors.bad_request(f"cannot exec into a container in a completed pod; current phase is {phase}")
        if not command:
            raise errors.bad_request("you must specify at least one command for the container")
        if not any(_flag(query, k, k != "stdin") for k in ("stdin", "stdout", "stderr")):
            raise errors.bad_request("you must specify at least 1 of stdin, stdout, stderr")
        runtime = self.kubelet.runtime(namespace, name)
        run = next((c for c in (runtime.main if runtime else []) if c.name == container), None)
        if runtime is None or run is None or run.state != "running" or container not in runtime.contexts:
            raise errors.ApiError(400, "BadRequest", f'container not found ("{container}")')
        return container, command

    async def handle(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        try:
            container, command = self._validate(request, namespace, name)
        except errors.ApiError as err:
            return _status_response(err)
        ws = web.WebSocketResponse(protocols=protocol.SUPPORTED, autoping=True)
        if not ws.can_prepare(request).ok:
            return _status_response(errors.bad_request("Upgrade request required"))
        await ws.prepare(request)
        proto = ws.ws_protocol or protocol.V1
        runtime = self.kubelet.runtime(namespace, name)
        ctx = runtime.contexts[container] if runtime else None
        query = request.query
        want_stdin = _flag(query, "stdin", False)
        tty = _flag(query, "tty", False)
        try:
            if ctx is None:
                raise runner.RunnerError("pod sandbox is gone")
            proc = await runner.spawn(ctx.process(tuple(command)), stdin=want_stdin)
        except (runner.RunnerError, OSError) as exc:
            await self._send(ws, proto, protocol.ERROR,
                             protocol.error_payload(proto, protocol.internal_status(f"error executing command in "
                                                                                   f"container: {exc}")))
            await ws.close()
            return ws
        pumps = [asyncio.create_task(self._pump(proc.stdout, ws, proto, protocol.STDOUT)),
                 asyncio.create_task(self._pump(proc.stderr, ws, proto, protocol.STDOUT if tty else protocol.STDERR))]
        reader = asyncio.create_task(self._read_input(ws, proto, proc))
        await asyncio.gather(*pumps)
        code = runner.exit_code_of(await proc.wait())
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        status = protocol.success_status() if code == 0 else protocol.exit_status(command, code)
        await self._send(ws, proto, protocol.ERROR, protocol.error_payload(proto, status))
        await ws.close()
        return ws

    @staticmethod
    async def _send(ws: web.WebSocketResponse, proto: str, channel: int, data: bytes) -> None:
        if ws.closed:
            return
        message = protocol.encode(proto, channel, data)
        with contextlib.suppress(ConnectionError, RuntimeError):
            if isinstance(message, str):
                await ws.send_str(message)
            else:
                await ws.send_bytes(message)

    async def _pump(self, stream: asyncio.StreamReader | None, ws: web.WebSocketResponse, proto: str,
                    channel: int) -> None:
        if stream is None:
            return
        while chunk := await stream.read(32768):
            await self._send(ws, proto, channel, chunk)

    @staticmethod
    async def _read_input(ws: web.WebSocketResponse, proto: str, proc: asyncio.subprocess.Process) -> None:
        stdin = proc.stdin
        async for msg in ws:
            if msg.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
                continue
            frame = protocol.decode(proto, msg.data)
            if frame is None:
                continue
            if frame.channel == protocol.STDIN and stdin is not None and not stdin.is_closing():
                with contextlib.suppress(ConnectionError):
                    stdin.write(frame.data)
                    await stdin.drain()
            elif frame.channel == protocol.CLOSE and proto == protocol.V5 and frame.data[:1] == b"\x00":
                if stdin is not None and not stdin.is_closing():
                    stdin.close()
        # the client went away: end its input, and stop a command nobody listens to any more
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        if proc.returncode is None:
            runner.kill_group(proc.pid)
