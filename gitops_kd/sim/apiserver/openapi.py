"""OpenAPI endpoints: empty-but-valid documents, so kubectl falls back to its built-in type information."""

from __future__ import annotations

import json

from aiohttp import web


async def v2(request: web.Request) -> web.Response:
    """/openapi/v2: a valid Swagger 2.0 document with no definitions."""
    doc = {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.30.4"}, "paths": {}, "definitions": {}}
    return web.Response(text=json.dumps(doc), content_type="application/json")


async def v3(request: web.Request) -> web.Response:
    """/openapi/v3: the discovery document, listing no group-versions."""
    return web.Response(text=json.dumps({"paths": {}}), content_type="application/json")
