"""Redaction at the edge: the one function that takes credentials out of any text leaving the process.

``redact(text)`` masks, wherever they appear in a message: the userinfo of a URL (``https://user:token@host`` ->
``https://***@host``; ``ssh://git@host`` keeps its plain user name), the secret path of a Slack-style incoming
webhook (``/services/T…/B…/<secret>``), ``Authorization``-like values (``Authorization: Bearer x``, ``token=x``,
``password: x``, a bare ``Bearer x``), well-known token formats (GitHub, GitLab, Slack) and every value registered
with ``add_secret`` (a token file's content, the push webhook secret, an alert URL's path). Applied to log lines
(``RedactingFilter``), Events, the GitOpsKDSource status, every HTTP answer (the UI, /metrics) and alerts.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

MASK = "***"
MIN_SECRET = 6  # a registered value shorter than this is not masked (it would mask ordinary words)

_USERINFO = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)([^/\s@'\"<>|]+)@")
_PLAIN_USER_SCHEMES = ("ssh", "git+ssh", "ssh+git", "git")
_WEBHOOK_PATH = re.compile(r"(/(?:services|workflows|triggers)/[A-Za-z0-9]+/[A-Za-z0-9]+/)[A-Za-z0-9_-]+")
_KEYED = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-gitlab-token|private[-_]token|access[-_]token|api[-_]?key|token|password|passwd"
    r"|secret)(\"?\s*[:=]\s*\"?)(?:(bearer|basic|token)\s+)?(?!(?:bearer|basic|token)\b)([^\s\"',;&<>]{6,})"
)
_SCHEME_VALUE = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")
_QUERY = re.compile(r"(?i)([?&](?:token|access_token|private_token|api_key|key|sig|signature|password)=)[^&\s\"'<>]+")
_KNOWN_TOKENS = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,})"
)

_lock = threading.Lock()
_secrets: dict[str, str] = {}  # exact value -> what replaces it


def add_secret(value: str, shown: str = MASK) -> None:
    """Mask ``value`` (stripped) wherever it appears from now on, as ``shown``; values shorter than MIN_SECRET are
    ignored."""
    value = value.strip()
    if len(value) >= MIN_SECRET:
        with _lock:
            _secrets[value] = shown


_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://(?:([^/@]*)@)?([^/?#]*)([^?#]*)(\?[^#]*)?")


def add_secret_url(url: str, *, path_is_secret: bool = True) -> None:
    """Mask the userinfo of ``url`` from now on, and (``path_is_secret``: an alert or webhook URL, whose path may be
    its credential, as a Slack or Discord incoming webhook's is) its path and query: shown as scheme://host/***."""
    match = _URL.match(url.strip())
    if match is None:  # a local path, scp-like git@host:path: no userinfo to hide
        if path_is_secret:
            add_secret(url)
        return
    scheme, userinfo, host, path, query = match.groups()
    if userinfo:
        user, _, password = userinfo.partition(":")
        add_secret(password)
        if scheme.lower().startswith("http"):
            add_secret(user)
    if path_is_secret and (path.strip("/") or query):
        add_secret(url.strip(), f"{scheme}://{host}/{MASK}")


def _userinfo(match: re.Match[str]) -> str:
    scheme, info = match.group(1), match.group(2)
    if ":" not in info and scheme[:-3].lower() in _PLAIN_USER_SCHEMES:
        return match.group(0)  # ssh://git@host: a user name, not a credential
    return f"{scheme}{MASK}@"


def _keyed(match: re.Match[str]) -> str:
    scheme = f"{match.group(3)} " if match.group(3) else ""
    return f"{match.group(1)}{match.group(2)}{scheme}{MASK}"


def redact(text: str) -> str:
    """``text`` with every credential it contains masked (see the module docstring)."""
    if not text:
        return text
    with _lock:
        secrets = sorted(_secrets.items(), key=lambda item: -len(item[0]))
    for value, shown in secrets:
        if value in text:
            text = text.replace(value, shown)
    text = _USERINFO.sub(_userinfo, text)
    text = _WEBHOOK_PATH.sub(lambda m: m.group(1) + MASK, text)
    text = _QUERY.sub(lambda m: m.group(1) + MASK, text)
    text = _KEYED.sub(_keyed, text)
    text = _SCHEME_VALUE.sub(lambda m: f"{m.group(1)} {MASK}", text)
    return _KNOWN_TOKENS.sub(MASK, text)


def redact_data(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings) with every string, key or value, passed through redact."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k: redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    return value


class RedactingFilter(logging.Filter):
    """A logging filter (on a handler, so every record it emits passes it) that redacts the formatted message and
    the traceback of each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def install_log_filter(logger: logging.Logger | None = None) -> None:
    """Put a RedactingFilter on every handler of ``logger`` (the root logger by default) that lacks one."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
