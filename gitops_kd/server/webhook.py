"""Push webhook endpoint: verifies GitHub HMAC signatures (or a GitLab token) and only triggers a Git poll.

The payload is never trusted for content: a verified push only asks the poller to fetch now; the desired
state always comes from the repository itself. The secret is never logged.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web

log = logging.getLogger(__name__)

MAX_BODY = 1024 * 1024
SIGNATURE_HEADER = "X-Hub-Signature-256"
GITHUB_EVENT = "X-GitHub-Event"
GITHUB_DELIVERY = "X-GitHub-Delivery"
GITLAB_TOKEN = "X-Gitlab-Token"
GITLAB_EVENT = "X-Gitlab-Event"
PUSH_EVENTS = frozenset({"push", "Push Hook", "Tag Push Hook"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def verify_signature(secret: bytes, body: bytes, header: str | None) -> bool:
    """True when `header` is ``sha256=<hex>`` of HMAC-SHA256(secret, body); constant-time compare."""
    if not secret or not header:
        return False
    scheme, _, given = header.strip().partition("=")
    if scheme != "sha256" or not given:
        return False
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), given.lower().encode("ascii", "replace"))


def verify_gitlab_token(secret: bytes, header: str | None) -> bool:
    """True when GitLab's X-Gitlab-Token equals the secret (constant-time compare)."""
    if not secret or header is None:
        return False
    return hmac.compare_digest(secret, header.encode("utf-8", "replace"))


def sign(secret: bytes, body: bytes) -> str:
    """The X-Hub-Signature-256 value GitHub would send for `body`."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def load_secret(path: str | Path) -> bytes:
    """Read a webhook secret from a file (e.g. a mounted Secret key); one trailing newline is dropped."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ValueError(f"{file}: cannot read the webhook secret: {exc.strerror or exc}") from exc
    data = data[:-1] if data.endswith(b"\n") else data
    data = data[:-1] if data.endswith(b"\r") else data
    if not data:
        raise ValueError(f"{file}: the webhook secret is empty")
    return data


def _reply(status: int, message: str, **extra: Any) -> web.Response:
    return web.json_response({"status": status, "message": message, **extra}, status=status)


async def _read_limited(request: web.Request, limit: int) -> bytes | None:
    """The body, or None when it is larger than `limit` bytes (declared or actually sent)."""
    if request.content_length is not None and request.content_length > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await request.content.read(64 * 1024)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)


def _payload(request: web.Request, body: bytes) -> dict[str, Any]:
    """The JSON payload; GitHub's form encoding (payload=<json>) is accepted too. Raises ValueError."""
    text = body.decode("utf-8")
    if request.content_type == "application/x-www-form-urlencoded":
        text = (parse_qs(text).get("payload") or [""])[0]
    data = json.loads(text) if text else {}
    if not isinstance(data, dict):
        raise ValueError("the payload is not a JSON object")
    return data


def make_webhook_handler(
    secret: bytes | None,
    trigger: Callable[[], str | None],
    *,
    max_body: int = MAX_BODY,
    branch: str | None = None,
    allow_gitlab_token: bool = False,
) -> Handler:
    """An aiohttp handler for POST /webhook.

    With `secret` every request must carry a valid X-Hub-Signature-256 (or, with `allow_gitlab_token`,
    an X-Gitlab-Token equal to the secret) — else 401. `secret` None disables verification (logged;
    only for local use). Answers: 405 for non-POST, 413 above `max_body` bytes, 400 for a missing event
    header or a bad push payload, 200 for ``ping`` and for ignored events or other branches, 202 when a
    push triggered a poll, 503 when `trigger` raised. With `branch`, only pushes whose ``ref`` is
    ``refs/heads/<branch>`` trigger. `trigger` returns what it did when that is not a poll here (a standby
    replica records the request for the leader), said in the 202's message.
    """
    if secret is not None and not secret:
        raise ValueError("webhook secret must not be empty (use None to disable verification)")
    if max_body < 1:
        raise ValueError(f"max_body must be at least 1 byte, got {max_body}")
    if secret is None:
        log.warning("webhook: no secret configured, requests are NOT authenticated")
    wanted_ref = f"refs/heads/{branch}" if branch else None

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.method != "POST":
            return web.json_response(
                {"status": 405, "message": f"method {request.method} not allowed"}, status=405, headers={"Allow": "POST"}
            )
        body = await _read_limited(request, max_body)
        if body is None:
            log.warning("webhook: refused a body larger than %d bytes from %s", max_body, request.remote)
            return _reply(413, f"request body larger than {max_body} bytes")
        if secret is not None and not _authentic(request, body):
            log.warning("webhook: refused a request from %s with a missing or bad signature", request.remote)
            return _reply(401, "missing or invalid signature")
        event = request.headers.get(GITHUB_EVENT) or request.headers.get(GITLAB_EVENT)
        delivery = request.headers.get(GITHUB_DELIVERY, "-")
        if not event:
            return _reply(400, f"missing {GITHUB_EVENT} header")
        if event == "ping":
            return _reply(200, "pong")
        if event not in PUSH_EVENTS:
            log.info("webhook: ignoring %s event (delivery %s)", event, delivery)
            return _reply(200, f"event {event} ignored")
        try:
            payload = _payload(request, body)
        except ValueError as exc:
            return _reply(400, f"bad push payload: {exc}")
        except RecursionError:
            return _reply(400, "bad push payload: nested too deeply")
        ref = payload.get("ref")
        if wanted_ref is not None and ref != wanted_ref:
            log.info("webhook: push to %s ignored, following %s (delivery %s)", ref, wanted_ref, delivery)
            return _reply(200, f"push to {ref} ignored", triggered=False)
        try:
            done = await asyncio.get_running_loop().run_in_executor(None, trigger)
        except Exception as exc:
            log.exception("webhook: triggering a poll failed (delivery %s)", delivery)
            return _reply(503, f"could not trigger a poll: {exc}")
        log.info("webhook: push to %s, %s (delivery %s)", ref, done or "poll triggered", delivery)
        return _reply(202, done or "poll triggered", triggered=True)

    def _authentic(request: web.Request, body: bytes) -> bool:
        assert secret is not None
        signature = request.headers.get(SIGNATURE_HEADER)
        if signature is not None:
            return verify_signature(secret, body, signature)
        if allow_gitlab_token:
            return verify_gitlab_token(secret, request.headers.get(GITLAB_TOKEN))
        return False

    return handle
