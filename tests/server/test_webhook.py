"""The push webhook over real HTTP: signatures, GitLab tokens, size limits, events, branch filter."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

import pytest
from aiohttp import web

from gitops_kd.server.webhook import MAX_BODY, load_secret, make_webhook_handler, sign, verify_signature
from gitops_kd.source import GitSource, Poller

SECRET = b"s3cret-webhook"
PUSH = json.dumps({"ref": "refs/heads/main", "after": "0" * 40, "commits": [{"id": "x"}]}).encode()


class Triggers:
    def __init__(self, fail: bool = False) -> None:
        self.count = 0
        self.fail = fail
        self._lock = threading.Lock()

    def __call__(self) -> None:
        if self.fail:
            raise RuntimeError("Poller.trigger_now: the poller is not started")
        with self._lock:
            self.count += 1


def webhook_app(secret: bytes | None, trigger: Callable[[], None], **options: object) -> web.Application:
    app = web.Application()
    app.router.add_route("*", "/webhook", make_webhook_handler(secret, trigger, **options))  # type: ignore[arg-type]
    return app


def github(body: bytes, event: str = "push", secret: bytes = SECRET) -> dict[str, str]:
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": "d-1",
        "Content-Type": "application/json",
        "X-Hub-Signature-256": sign(secret, body),
    }


def test_signature_matches_githubs_documented_example() -> None:
    secret, body = b"It's a Secret to Everybody", b"Hello, World!"
    header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert verify_signature(secret, body, header)
    assert verify_signature(secret, body, header.upper().replace("SHA256=", "sha256="))
    assert not verify_signature(secret, body + b" ", header)
    assert not verify_signature(b"other", body, header)
    assert not verify_signature(secret, body, header.replace("sha256=", "sha1="))
    assert not verify_signature(secret, body, None)
    assert not verify_signature(secret, body, "sha256=")
    assert not verify_signature(b"", body, header)


def test_signed_push_triggers_one_poll(serve) -> None:
    triggers = Triggers()
    server = serve(webhook_app(SECRET, triggers, branch="main"))
    reply = server.request("POST", "/webhook", PUSH, github(PUSH))
    assert reply.status == 202, reply.body
    assert json.loads(reply.body)["triggered"] is True
    assert triggers.count == 1


@pytest.mark.parametrize(
    "headers",
    [
        {"X-GitHub-Event": "push"},
        {"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + "0" * 64},
        {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(b"wrong secret", PUSH)},
        {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(SECRET, PUSH + b"\n")},
        {"X-GitHub-Event": "push", "X-Hub-Signature": "sha1=" + "0" * 40},
        {"X-GitHub-Event": "push", "X-Gitlab-Token": SECRET.decode()},  # GitLab tokens not enabled
    ],
    ids=["missing", "zeros", "wrong-secret", "other-body", "sha1-only", "gitlab-not-enabled"],
)
def test_missing_or_bad_signature_is_401_and_triggers_nothing(serve, headers) -> None:
    triggers = Triggers()
    server = serve(webhook_app(SECRET, triggers))
    reply = server.request("POST", "/webhook", PUSH, headers)
    assert reply.status == 401
    assert b"signature" in reply.body
    assert triggers.count == 0


def test_ping_is_answered_without_polling(serve) -> None:
    triggers = Triggers()
    server = serve(webhook_app(SECRET, triggers))
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    reply = server.request("POST", "/webhook", body, github(body, "ping"))
    assert reply.status == 200 and json.loads(reply.body)["message"] == "pong"
    assert triggers.count == 0


def test_ping_with_a_bad_signature_is_still_401(serve) -> None:
    server = serve(webhook_app(SECRET, Triggers()))
    reply = server.request("POST", "/webhook", b"{}", {"X-GitHub-Event": "ping", "X-Hub-Signature-256": sign(b"x", b"{}")})
    assert reply.status == 401


def test_non_post_is_405_with_allow_header(serve) -> None:
    server = serve(webhook_app(SECRET, Triggers()))
    for method in ("GET", "PUT", "DELETE"):
        reply = server.request(method, "/webhook")
        assert reply.status == 405, method
        assert reply.headers["allow"] == "POST"


def test_oversize_declared_body_is_413(serve) -> None:
    triggers = Triggers()
    server = serve(webhook_app(SECRET, triggers, max_body=1000))
    body = json.dumps({"ref": "refs/heads/main", "pad": "x" * 2000}).encode()
    reply = server.request("POST", "/webhook", body, github(body))
    assert reply.status == 413
    assert triggers.count == 0


def test_oversize_chunked_body_is_413(serve) -> None:
    triggers = Triggers()
    server = serve(webhook_app(SECRET, triggers))
    body = b"{" + b" " * (MAX_BODY + 10) + b"}"
    reply = server.request("POST", "/webhook", body, github(body), chunked=True)
    assert reply.status == 413
    assert triggers.count == 0


def test_body_at_the_limit_is_accepted(serve) -> None:
    triggers = Triggers()
    head = b'{"ref": "refs/heads/main", "pad": "'
    body = head + b"x" * (1000 - len(head) - 2) + b'"}'
    assert len(body) == 1000
    server = serve(webhook_app(SECRET, triggers, max_body=1000))
    assert server.request("POST", "/webhook", body, github(body)).status == 202
    assert triggers.count == 1


def test_push_to_another_branch_is_ignored(serve) -> None:
    triggers = Triggers()
    server = serve(webhook_app(SECRET, triggers, branch="main"))
    body = json.dumps({"ref": "refs/heads/feature"}).encode()
    reply = server.request("POST", "/webhook", body, github(body))
    assert reply.status == 200 and json.loads(reply.body)["triggered"] is False
    tag = json.dumps({"ref": "refs/tags/main"}).encode()
    assert server.request("POST", "/webhook", tag, github(tag)).status == 200
    assert triggers.count == 0


def test_without_branch_filter_any_push_triggers(serve) -> None:
    triggers = Triggers()
    server = serve(webhook_app(SECRET, triggers))
    body = json.dumps({"ref": "refs/heads/feature"}).encode()
    assert server.request("POST", "/webhook", body, github(body)).status == 202
    assert triggers.count == 1


def test_form_encoded_payload_is_understood(serve) -> None:
    triggers = Triggers()
    server = serve(webhook_app(SECRET, triggers, branch="main"))
    body = urlencode({"payload": json.dumps({"ref": "refs/heads/main"})}).encode()
    headers = dict(github(body), **{"Content-Type": "application/x-www-form-urlencoded"})
    assert server.request("POST", "/webhook", body, headers).status == 202
    assert triggers.count == 1


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b"\xff\xfe"], ids=["syntax", "array", "not-utf8"])
def test_bad_push_payload_is_400(serve, body) -> None:
    triggers = Triggers()
    server = serve(webhook_app(SECRET, triggers, branch="main"))
    reply = server.request("POST", "/webhook", body, github(body))
    assert reply.status == 400 and b"bad push payload" in reply.body
    assert triggers.count == 0


def test_missing_event_header_is_400_and_other_events_are_ignored(serve) -> None:
    triggers = Triggers()
    server = serve(webhook_app(SECRET, triggers))
    headers = github(PUSH)
    del headers["X-GitHub-Event"]
    assert server.request("POST", "/webhook", PUSH, headers).status == 400
    reply = server.request("POST", "/webhook", PUSH, github(PUSH, "issues"))
    assert reply.status == 200 and b"ignored" in reply.body
    assert triggers.count == 0


def test_gitlab_token_when_enabled(serve) -> None:
    triggers = Triggers()
    server = serve(webhook_app(SECRET, triggers, allow_gitlab_token=True, branch="main"))
    ok = {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": SECRET.decode()}
    assert server.request("POST", "/webhook", PUSH, ok).status == 202
    bad = dict(ok, **{"X-Gitlab-Token": "nope"})
    assert server.request("POST", "/webhook", PUSH, bad).status == 401
    assert server.request("POST", "/webhook", PUSH, {"X-Gitlab-Event": "Push Hook"}).status == 401
    assert triggers.count == 1


def test_failing_trigger_is_503(serve) -> None:
    server = serve(webhook_app(SECRET, Triggers(fail=True)))
    reply = server.request("POST", "/webhook", PUSH, github(PUSH))
    assert reply.status == 503 and b"not started" in reply.body


def test_no_secret_accepts_unsigned_pushes(serve) -> None:
    triggers = Triggers()
    server = serve(webhook_app(None, triggers))
    assert server.request("POST", "/webhook", PUSH, {"X-GitHub-Event": "push"}).status == 202
    assert triggers.count == 1


def test_empty_secret_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        make_webhook_handler(b"", lambda: None)


def test_load_secret(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(b"abc\n")
    assert load_secret(tmp_path / "secret") == b"abc"
    (tmp_path / "empty").write_bytes(b"\n")
    with pytest.raises(ValueError, match=r"empty: the webhook secret is empty"):
        load_secret(tmp_path / "empty")
    with pytest.raises(ValueError, match=r"missing: cannot read the webhook secret"):
        load_secret(tmp_path / "missing")


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "T",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "T",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def test_push_webhook_makes_a_real_poller_fetch_the_new_commit(serve, tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q", "-b", "main")
    (origin / "README.md").write_text("one\n")
    _git(origin, "add", "-A")
    _git(origin, "commit", "-q", "-m", "one")
    with GitSource(origin.as_uri(), "main", tmp_path / "cache") as source:
        results = []
        poller = Poller(source, results.append, interval=3600)
        with poller:
            assert poller.wait_for_polls(1, 30)
            first = results[-1].commit
            (origin / "README.md").write_text("two\n")
            _git(origin, "commit", "-q", "-am", "two")
            second = _git(origin, "rev-parse", "HEAD")
            server = serve(webhook_app(SECRET, poller.trigger_now, branch="main"))
            body = json.dumps({"ref": "refs/heads/main", "after": "f" * 40}).encode()  # payload sha is ignored
            assert server.request("POST", "/webhook", body, github(body)).status == 202
            assert poller.wait_for_polls(2, 30)
    assert first != second
    assert results[-1].commit == second


def test_a_signed_push_nested_100000_deep_is_a_400_with_the_reason(serve) -> None:
    """Invariant: no payload a signed sender can post makes the webhook fail with a 500: one nested 100,000 deep
    (within the body limit) is a 400 naming the reason, and triggers nothing."""
    triggers = Triggers()
    server = serve(webhook_app(SECRET, triggers, branch="main"))
    body = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    assert len(body) < MAX_BODY
    reply = server.request("POST", "/webhook", body, github(body))
    assert reply.status == 400, reply.body
    assert json.loads(reply.body)["message"] == "bad push payload: nested too deeply"
    assert triggers.count == 0
