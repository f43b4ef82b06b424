"""exec and attach: pods/{name}/exec of the embedded API server and the kubelet's /exec, /attach and /run paths.

Each validates like its real counterpart, upgrades to WebSocket or SPDY/3.1 and streams a chroot-run command (attach:
the simulated main container prints nothing, so the stream stays open until the client leaves or the
container stops). The pod comes from the kubelet's own watch cache, as on a real node.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from aiohttp import web

from kdsim import errors
from kdsim.apiserver.faults import ANSWER_LOST
from kdsim.exec import channels, protocol, upgrade
from kdsim.kubelet import runner
from kdsim.kubelet.host import PodHost

log = logging.getLogger(__name__)


def status_response(err: errors.ApiError) -> web.Response:
    return web.Response(status=err.code, text=json.dumps(err.to_status()), content_type="application/json")


def _flag(query: Any, key: str, default: bool) -> bool:
    value = query.get(key)
    return default if value is None else value.lower() in ("1", "true", "yes")


# stream -> (query parameter, default): the API server's pods/{name}/exec, and the kubelet's /exec, whose
# parameters are input, output and error ("1" when on), as kube-apiserver sends them
API_STREAMS = {"stdin": ("stdin", False), "stdout": ("stdout", True), "stderr": ("stderr", True), "tty": ("tty", False)}
KUBELET_STREAMS = {"stdin": ("input", False), "stdout": ("output", False), "stderr": ("error", False), "tty": ("tty", False)}


def streams_of(query: Any, names: dict[str, tuple[str, bool]]) -> dict[str, bool]:
    """Which of stdin, stdout, stderr and tty the request turns on."""
    return {stream: _flag(query, key, default) for stream, (key, default) in names.items()}


ATTACH_POLL_SECONDS = 0.5  # how often an attach stream checks that its container still runs


class ExecHandler:
    """Serves exec and attach for pods of the simulated kubelet."""

    def __init__(self, kubelet: PodHost) -> None:
        self.kubelet = kubelet

    def _validate(
        self,
        request: web.Request,
        namespace: str,
        name: str,
        container: str,
        *,
        streams: dict[str, bool],
        uid: str | None = None,
        attach: bool = False,
    ) -> tuple[str, list[str]]:
        pod = self.kubelet.pod(namespace, name)
        if pod is None or (uid and (pod.get("metadata") or {}).get("uid") != uid):
            raise errors.not_found("pods", name)
        query = request.query
        command = query.getall("command", [])
        containers = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
        if not container:
            if len(containers) != 1:
                raise errors.bad_request(
                    f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
                )
            container = containers[0]
        inits = [c["name"] for c in (pod.get("spec") or {}).get("initContainers") or []]
        if container not in containers and container not in inits:
            raise errors.bad_request(f"container {container} is not valid for pod {name}")
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            raise errors.bad_request(f"cannot exec into a container in a completed pod; current phase is {phase}")
        if not command and not attach:
            raise errors.bad_request("you must specify at least one command for the container")
        if not any(streams[k] for k in ("stdin", "stdout", "stderr")):
            raise errors.bad_request("you must specify at least 1 of stdin, stdout, stderr")
        runtime = self.kubelet.runtime(namespace, name)
        run = next((c for c in (runtime.main if runtime else []) if c.name == container), None)
        if runtime is None or run is None or run.state != "running" or container not in runtime.contexts:
            raise errors.ApiError(400, "BadRequest", f'container not found ("{container}")')
        return container, command

    async def handle(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        """pods/{name}/exec (and attach) of the embedded API server: the container from the query."""
        attach = request.path.rstrip("/").endswith("/attach")
        return await self._serve(
            request,
            namespace,
            name,
            request.query.get("container") or "",
            streams=streams_of(request.query, API_STREAMS),
            attach=attach,
        )

    async def kubelet_exec(self, request: web.Request) -> web.StreamResponse:
        """The kubelet's /exec/{namespace}/{pod}[/{uid}]/{container} (what a real API server proxies to)."""
        m = request.match_info
        return await self._serve(
            request,
            m["namespace"],
            m["pod"],
            m["container"],
            streams=streams_of(request.query, KUBELET_STREAMS),
            uid=m.get("uid"),
        )

    async def kubelet_attach(self, request: web.Request) -> web.StreamResponse:
        """The kubelet's /attach/{namespace}/{pod}[/{uid}]/{container}."""
        m = request.match_info
        return await self._serve(
            request,
            m["namespace"],
            m["pod"],
            m["container"],
            streams=streams_of(request.query, KUBELET_STREAMS),
            uid=m.get("uid"),
            attach=True,
        )

    async def kubelet_run(self, request: web.Request) -> web.StreamResponse:
        """The kubelet's POST /run/{namespace}/{pod}[/{uid}]/{container}?cmd=...: the output, no streaming."""
        m = request.match_info
        form = await request.post() if request.can_read_body else {}
        cmd = str(request.query.get("cmd") or form.get("cmd") or "")
        try:
            pod = self.kubelet.pod(m["namespace"], m["pod"])
            if pod is None or (m.get("uid") and pod["metadata"].get("uid") != m["uid"]):
                raise errors.not_found("pods", m["pod"])
            runtime = self.kubelet.runtime(m["namespace"], m["pod"])
            ctx = runtime.contexts.get(m["container"]) if runtime else None
            if ctx is None or not cmd:
                raise errors.bad_request(
                    f'container not found ("{m["container"]}")' if ctx is None else "you must specify a command (cmd)"
                )
        except errors.ApiError as err:
            return status_response(err)
        try:
            proc = await runner.spawn(ctx.process(tuple(cmd.split(" "))), stdin=False)
        except (runner.RunnerError, OSError) as exc:
            return web.Response(status=500, text=f"error executing command in container: {exc}")
        out, err_out = await proc.communicate()
        return web.Response(body=out + err_out, content_type="text/plain")

    async def _serve(
        self,
        request: web.Request,
        namespace: str,
        name: str,
        container: str,
        *,
        streams: dict[str, bool],
        uid: str | None = None,
        attach: bool = False,
    ) -> web.StreamResponse:
        try:
            container, command = self._validate(request, namespace, name, container, streams=streams, uid=uid, attach=attach)
        except errors.ApiError as err:
            return status_response(err)
        opened = await self._open(request, streams)
        if isinstance(opened, web.StreamResponse):
            return opened
        runtime = self.kubelet.runtime(namespace, name)
        if attach:
            await self._attach(opened, namespace, name, container)
            return opened.response
        ctx = runtime.contexts[container] if runtime else None
        want_stdin, tty = streams["stdin"], streams["tty"]
        try:
            if ctx is None:
                raise runner.RunnerError("pod sandbox is gone")
            proc = await runner.spawn(ctx.process(tuple(command)), stdin=want_stdin)
        except (runner.RunnerError, OSError) as exc:
            await opened.finish(protocol.internal_status(f"error executing command in container: {exc}"))
            return opened.response
        if ANSWER_LOST.get():
            await proc.communicate()  # it runs to its end; its output and exit status never reach the client
            if request.transport is not None:
                request.transport.abort()  # the connection drops: no status frame, no close frame
            return opened.response
        pumps = [
            asyncio.create_task(self._pump(proc.stdout, opened, protocol.STDOUT)),
            asyncio.create_task(self._pump(proc.stderr, opened, protocol.STDOUT if tty else protocol.STDERR)),
        ]
        reader = asyncio.create_task(self._read_input(opened, proc))
        await asyncio.gather(*pumps)
        code = runner.exit_code_of(await proc.wait())
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        await opened.finish(protocol.success_status() if code == 0 else protocol.exit_status(command, code))
        return opened.response

    @staticmethod
    async def _open(request: web.Request, streams: dict[str, bool]) -> channels.Channels | web.StreamResponse:
        """The session's channels: SPDY/3.1 (kubectl before 1.30) or WebSocket; 400 for anything else."""
        if upgrade.is_spdy(request):
            return await channels.open_spdy(request, streams)
        ws = web.WebSocketResponse(protocols=protocol.SUPPORTED, autoping=True)
        if not ws.can_prepare(request).ok:
            return status_response(errors.bad_request("Upgrade request required"))
        await ws.prepare(request)
        return channels.WebSocketChannels(ws)

    async def _attach(self, opened: channels.Channels, namespace: str, name: str, container: str) -> None:
        """Hold the stream while the (silent) container runs: until the client leaves or the container stops."""
        runtime = self.kubelet.runtime(namespace, name)
        reader = asyncio.create_task(_drain(opened))
        while not reader.done():
            run = next((c for c in (runtime.main if runtime else []) if c.name == container), None)
            if self.kubelet.runtime(namespace, name) is not runtime or run is None or run.state != "running":
                break
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader), ATTACH_POLL_SECONDS)
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        await opened.finish(protocol.success_status())

    @staticmethod
    async def _pump(stream: asyncio.StreamReader | None, opened: channels.Channels, channel: int) -> None:
        if stream is None:
            return
        while chunk := await stream.read(32768):
            await opened.send(channel, chunk)

    @staticmethod
    async def _read_input(opened: channels.Channels, proc: asyncio.subprocess.Process) -> None:
        stdin = proc.stdin
        async for frame in opened.input():
            if frame.channel == protocol.STDIN and stdin is not None and not stdin.is_closing():
                with contextlib.suppress(ConnectionError):
                    stdin.write(frame.data)
                    await stdin.drain()
            elif frame.channel == protocol.CLOSE and frame.data[:1] == b"\x00":
                if stdin is not None and not stdin.is_closing():
                    stdin.close()
        # the client went away: end its input, and stop a command nobody listens to any more
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        if proc.returncode is None:
            runner.kill_group(proc.pid)


async def _drain(opened: channels.Channels) -> None:
    """Read (and drop) what an attached client sends, until it closes the stream."""
    async for _frame in opened.input():
        pass
