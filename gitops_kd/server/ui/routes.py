"""The UI's aiohttp routes under /ui: three pages, their JSON twins, static files and the auth middleware.

GET /ui/                                   fleet page      GET /ui/api/fleet
GET /ui/clusters/{namespace}/{name}         cluster page    GET /ui/api/clusters/{namespace}/{name}
GET /ui/apps/{namespace}/{app}/history      history page    GET /ui/api/apps/{namespace}/{app}/history
GET /ui/static/ui.css, /ui/static/ui.js     package data (no build step, no CDN)

Only GET (and HEAD): the UI has no write action. Each JSON answer is ``{"data": <view>, "html": <live
fragment>, "summary": <one line for aria-live>}``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from aiohttp import web
from kubernetes.client.exceptions import ApiException

from gitops_kd.health.refused import refused_clusters
from gitops_kd.health.service import LB_REQUIRE
from gitops_kd.server.ui import pages, views
from gitops_kd.server.ui.auth import UiAuth
from gitops_kd.server.ui.pages import PREFIX
from gitops_kd.server.ui.reader import Snapshot, UiReader

log = logging.getLogger(__name__)

STATIC = {"ui.css": "text/css", "ui.js": "text/javascript"}
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass
class UiConfig:
    """What the UI needs: a reader, optional auth, the refresh period, and three optional hooks into the
    controller: ``info()`` (repo, branch, appliedCommit, headCommit), ``subject(sha)`` (commit subject) and
    ``desired()`` (each KDApp's version in Git's last accepted commit, by (namespace, name))."""

    reader: UiReader
    auth: UiAuth | None = None
    refresh_seconds: float = 2.0
    info: Callable[[], Mapping[str, Any]] = field(default=dict)
    subject: Callable[[str], str | None] = field(default=lambda _sha: None)
    desired: Callable[[], Mapping[tuple[str, str], str]] = field(default=dict)
    loadbalancer_health: str = LB_REQUIRE  # how a LoadBalancer Service without an ingress counts (health/service.py)


CONFIG_KEY: web.AppKey[UiConfig] = web.AppKey("gitops_kd_ui")
Page = tuple[str, str, Any, str, str, list[tuple[str, str]]]  # title, heading, view, fragment, summary, crumbs


def auth_middleware(auth: UiAuth | None) -> Callable[..., Awaitable[web.StreamResponse]]:
    """401 for /ui requests without a valid credential (other paths untouched)."""

    @web.middleware
    async def middleware(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        path = request.path
        if (
            auth is not None
            and (path == PREFIX or path.startswith(PREFIX + "/"))
            and not auth.allows(request.headers.get("Authorization"))
        ):
            return web.Response(
                status=401, text="401: authentication required\n", headers={"WWW-Authenticate": auth.challenge, **HEADERS}
            )
        return await handler(request)

    return middleware


def _info(config: UiConfig) -> dict[str, Any]:
    try:
        return dict(config.info())
    except Exception:
        log.debug("ui: controller info failed", exc_info=True)
        return {}


async def _snapshot(request: web.Request) -> Snapshot:
    reader = request.app[CONFIG_KEY].reader
    try:
        return await asyncio.get_running_loop().run_in_executor(None, reader.snapshot)
    except ApiException as exc:
        raise _error(503, f"reading the cluster failed: {exc.status} {exc.reason}") from exc
    except Exception as exc:
        raise _error(503, f"reading the cluster failed: {type(exc).__name__}") from exc


def _error(status: int, message: str) -> web.HTTPException:
    cls = {404: web.HTTPNotFound, 503: web.HTTPServiceUnavailable}[status]
    return cls(text=pages.error_document(status, message), content_type="text/html", headers=HEADERS)


def _cluster_rows(snap: Snapshot, loadbalancer: str) -> list[tuple[Any, Any, Any, Any, list[Any], list[Any]]]:
    from gitops_kd.observe.fleet import healths

    fleet = snap.fleet
    out = []
    for key, health in zip(fleet.keys, healths(fleet, loadbalancer)):
        objects = fleet.objects(key)
        app = health.app
        out.append(
            (
                health,
                fleet.rollouts.get(key),
                fleet.kdclusters.get(key),
                snap.kdapp(key[0], app),
                objects["statefulsets"],
                objects["pods"],
            )
        )
    refused = [line for src in snap.sources for line in src.record.apply_refused.splitlines() if line.strip()]
    for health in refused_clusters(refused, set(fleet.keys)):  # not created: shown where it would be, saying why
        out.append((health, None, None, None, [], []))
    return out


async def _fleet(request: web.Request) -> Page:
    config = request.app[CONFIG_KEY]
    snap = await _snapshot(request)
    info = _info(config)
    view = views.fleet_view(
        _cluster_rows(snap, config.loadbalancer_health),
        snap.kdapps,
        snap.events,
        info=info,
        forbidden=snap.forbidden,
        sources=snap.sources,
        desired=config.desired(),
    )
    return ("Fleet", "Fleet", view, pages.fleet_fragment(view), pages.fleet_summary(view), [])


async def _cluster(request: web.Request) -> Page:
    from gitops_kd.observe.fleet import healths

    config = request.app[CONFIG_KEY]
    namespace, name = request.match_info["namespace"], request.match_info["name"]
    snap = await _snapshot(request)
    key = (namespace, name)
    if not config.reader.in_scope(namespace) or key not in snap.fleet.keys:
        raise _error(404, f"no KDCluster {namespace}/{name} managed by gitops-kd in the controller's scope")
    fleet = snap.fleet
    health = healths(_single(fleet, key), config.loadbalancer_health)[0]
    view = views.cluster_view(
        health,
        fleet.rollouts.get(key),
        fleet.kdclusters.get(key),
        snap.kdapp(namespace, health.app),
        fleet.objects(key),
        snap.events,
        info=_info(config),
        forbidden=snap.forbidden,
        sources=snap.sources,
    )
    crumbs = [(f"cluster {namespace}/{name}", pages.cluster_url(namespace, name))]
    return (f"{name}", f"Cluster {name} ({namespace})", view, pages.cluster_fragment(view), pages.cluster_summary(view), crumbs)


def _single(fleet: Any, key: tuple[str, str]) -> Any:
    from gitops_kd.observe.fleet import Fleet

    return Fleet([key], fleet.rollouts, fleet.kdclusters, fleet.members, fleet.forbidden)


async def _history(request: web.Request) -> Page:
    config = request.app[CONFIG_KEY]
    namespace, app = request.match_info["namespace"], request.match_info["app"]
    if not config.reader.in_scope(namespace):
        raise _error(404, f"namespace {namespace} is outside the controller's scope")
    snap = await _snapshot(request)
    rollouts = list(snap.fleet.rollouts.values())
    view = await asyncio.get_running_loop().run_in_executor(
        None, lambda: views.history_view(app, namespace, rollouts, config.subject)
    )
    if view["clusters"] == 0:
        raise _error(404, f"no KDRollout of app {app} in namespace {namespace}")
    crumbs = [(f"history of {namespace}/{app}", pages.history_url(namespace, app))]
    return (
        f"history of {app}",
        f"History of app {app} ({namespace})",
        view,
        pages.history_fragment(view),
        pages.history_summary(view),
        crumbs,
    )


def _page(build: Callable[[web.Request], Awaitable[Page]]) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        config = request.app[CONFIG_KEY]
        title, heading, _view, fragment, summary, crumbs = await build(request)
        fragment = pages.controller_line(_info(config)) + fragment
        api = PREFIX + "/api" + request.rel_url.raw_path[len(PREFIX) :]
        if api.endswith("/api/"):
            api = api[:-1] + "/fleet"
        html = pages.document(
            title, heading, fragment, summary, live_url=api, refresh_ms=int(config.refresh_seconds * 1000), crumbs=crumbs
        )
        return web.Response(text=html, content_type="text/html", charset="utf-8", headers=HEADERS)

    return handler


def _json(build: Callable[[web.Request], Awaitable[Page]]) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        try:
            _title, _heading, view, fragment, summary, _crumbs = await build(request)
        except web.HTTPException as exc:
            return web.json_response({"error": exc.reason, "status": exc.status}, status=exc.status, headers=HEADERS)
        fragment = pages.controller_line(_info(request.app[CONFIG_KEY])) + fragment
        body = json.dumps({"data": view, "html": fragment, "summary": summary})
        return web.Response(text=body, content_type="application/json", headers=HEADERS)

    return handler


async def _static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in STATIC:
        raise web.HTTPNotFound()
    data = resources.files("gitops_kd.server.ui").joinpath("static", name).read_bytes()
    return web.Response(body=data, content_type=STATIC[name], headers={**HEADERS, "Cache-Control": "private, max-age=300"})


async def _redirect(_request: web.Request) -> web.Response:
    raise web.HTTPFound(PREFIX + "/")


def add_ui_routes(app: web.Application, config: UiConfig) -> None:
    """Add the /ui routes to `app` (its middlewares must include ``auth_middleware(config.auth)``)."""
    app[CONFIG_KEY] = config
    r = app.router
    r.add_get(PREFIX, _redirect)
    r.add_get(PREFIX + "/", _page(_fleet))
    r.add_get(PREFIX + "/clusters/{namespace}/{name}", _page(_cluster))
    r.add_get(PREFIX + "/apps/{namespace}/{app}/history", _page(_history))
    r.add_get(PREFIX + "/api/fleet", _json(_fleet))
    r.add_get(PREFIX + "/api/clusters/{namespace}/{name}", _json(_cluster))
    r.add_get(PREFIX + "/api/apps/{namespace}/{app}/history", _json(_history))
    r.add_get(PREFIX + "/static/{name}", _static)
