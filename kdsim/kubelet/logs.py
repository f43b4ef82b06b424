"""pods/{name}/log and the kubelet's /containerLogs: the recorded output of a pod's containers (init containers
run for real; apps print nothing)."""

from __future__ import annotations

import json

from aiohttp import web

from kdsim import errors
from kdsim.kubelet.host import PodHost


class LogHandler:
    """Serves the log subresource from the container logs the kubelet keeps in the sandbox."""

    def __init__(self, kubelet: PodHost) -> None:
        self.kubelet = kubelet

    async def handle(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        """pods/{name}/log of the embedded API server: the container from the query."""
        return await self._serve(request, namespace, name, request.query.get("container") or "")

    async def kubelet_logs(self, request: web.Request) -> web.StreamResponse:
        """The kubelet's GET /containerLogs/{namespace}/{pod}/{container} (what a real API server proxies to)."""
        m = request.match_info
        return await self._serve(request, m["namespace"], m["pod"], m["container"])

    async def _serve(self, request: web.Request, namespace: str, name: str, container: str) -> web.StreamResponse:
        pod = self.kubelet.pod(namespace, name)
        if pod is None:
            return _error(errors.not_found("pods", name))
        spec = pod.get("spec") or {}
        containers = [c["name"] for c in spec.get("containers") or []]
        every = containers + [c["name"] for c in spec.get("initContainers") or []]
        if not container:
            if len(containers) != 1:
                return _error(
                    errors.bad_request(
                        f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
                    )
                )
            container = containers[0]
        if container not in every:
            return _error(errors.bad_request(f"container {container} is not valid for pod {name}"))
        runtime = self.kubelet.runtime(namespace, name)
        ctx = runtime.contexts.get(container) if runtime else None
        path = ctx.rootfs.parent / "log" if ctx else None
        data = path.read_bytes() if path is not None and path.is_file() else b""
        tail = request.query.get("tailLines")
        if tail is not None and tail.isdigit():
            lines = data.splitlines(keepends=True)
            data = b"".join(lines[-int(tail) :]) if int(tail) else b""
        return web.Response(body=data, content_type="text/plain")


def _error(err: errors.ApiError) -> web.Response:
    return web.Response(status=err.code, text=json.dumps(err.to_status()), content_type="application/json")
