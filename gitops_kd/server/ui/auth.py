"""Optional access control of the web UI, read from a file (a mounted Secret).

The file holds one credential per line (blank lines and `#` comments ignored):

- ``bearer <token>``: requests must send ``Authorization: Bearer <token>``;
- ``basic <user>:<password>``: requests may use HTTP Basic auth with that user and password (the browser
  asks for it). Basic credentials only ever grant the read-only UI: the UI has no write action.

Without a file the UI is open to whoever reaches the bind address (as /metrics is). Comparisons are
constant-time; an unauthenticated request gets 401 with a ``WWW-Authenticate: Basic`` challenge when a
basic credential is configured (so browsers prompt), else ``Bearer``.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from dataclasses import dataclass
from pathlib import Path


class AuthFileError(ValueError):
    """The auth file cannot be used (unreadable, empty, or a line that is not a credential)."""


@dataclass(frozen=True)
class UiAuth:
    """The accepted credentials: bearer tokens and (user, password) pairs."""

    tokens: tuple[str, ...] = ()
    basic: tuple[tuple[str, str], ...] = ()
    realm: str = "gitops-kd"

    @classmethod
    def parse(cls, text: str, source: str = "auth file") -> UiAuth:
        tokens: list[str] = []
        basic: list[tuple[str, str]] = []
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            scheme, _, value = line.partition(" ")
            value = value.strip()
            if scheme.lower() == "bearer" and value:
                tokens.append(value)
            elif scheme.lower() == "basic" and ":" in value and value.split(":", 1)[0]:
                user, _, password = value.partition(":")
                if not password:
                    raise AuthFileError(f"{source}: line {number}: basic credential without a password")
                basic.append((user, password))
            else:
                raise AuthFileError(f"{source}: line {number}: expected 'bearer <token>' or 'basic <user>:<password>'")
        if not tokens and not basic:
            raise AuthFileError(f"{source}: no credential (expected 'bearer <token>' or 'basic <user>:<password>' lines)")
        return cls(tuple(tokens), tuple(basic))

    @classmethod
    def load(cls, path: str | Path) -> UiAuth:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise AuthFileError(f"{path}: {exc.strerror or exc}") from exc
        return cls.parse(text, str(path))

    @property
    def challenge(self) -> str:
        return f'Basic realm="{self.realm}", charset="UTF-8"' if self.basic else f'Bearer realm="{self.realm}"'

    def allows(self, authorization: str | None) -> bool:
        """True when the Authorization header value carries one of the credentials."""
        if not authorization:
            return False
        scheme, _, value = authorization.strip().partition(" ")
        value = value.strip()
        if scheme.lower() == "bearer":
            return any(hmac.compare_digest(value.encode(), t.encode()) for t in self.tokens)
        if scheme.lower() == "basic" and self.basic:
            try:
                user, sep, password = base64.b64decode(value, validate=True).decode("utf-8").partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return False
            if not sep:
                return False
            ok = False
            for want_user, want_password in self.basic:  # no early exit: constant work per request
                ok |= hmac.compare_digest(user.encode(), want_user.encode()) & hmac.compare_digest(
                    password.encode(), want_password.encode()
                )
            return ok
        return False
