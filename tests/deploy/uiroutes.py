"""Every GET path of the web UI, enumerated from the server's own router (a new route cannot be missed)."""

from __future__ import annotations

from aiohttp import web
from kubernetes.client import ApiClient

from gitops_kd.server.ui.reader import UiReader
from gitops_kd.server.ui.routes import STATIC, UiConfig, add_ui_routes


def ui_paths(namespace: str, cluster: str, app: str) -> list[str]:
    """A concrete path per GET route of gitops_kd.server.ui, its parameters filled with the given cluster and app;
    a route with a parameter this helper does not know fails here (teach it, so the route is read)."""
    router = web.Application()
    add_ui_routes(router, UiConfig(reader=UiReader(ApiClient(), None)))
    values = {"namespace": namespace, "name": cluster, "app": app}
    paths: list[str] = []
    for route in router.router.routes():
        if route.method != "GET":
            continue
        template = route.resource.canonical if route.resource is not None else ""
        if "/static/" in template:
            paths.extend(template.format(name=name) for name in sorted(STATIC))
        else:
            paths.append(template.format(**values))
    return sorted(set(paths))
