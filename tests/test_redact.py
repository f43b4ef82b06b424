"""gitops_kd.redact, the one redaction function every surface uses: what it masks and what it leaves alone."""

from __future__ import annotations

import logging

import pytest

from gitops_kd.redact import RedactingFilter, add_secret_url, redact, redact_data


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://user:TOKEN123@127.0.0.1:1/x.git: git fetch failed", "https://***@127.0.0.1:1/x.git: git fetch failed"),
        ("fetch https://ghtoken0123@github.com/o/r.git", "fetch https://***@github.com/o/r.git"),
        ("ssh://git@github.com/o/r.git", "ssh://git@github.com/o/r.git"),
        ("ssh://git:pw123456@host/r.git", "ssh://***@host/r.git"),
        ("Authorization: Bearer abcdefghijkl", "Authorization: Bearer ***"),
        ("sent Basic dXNlcjpwYXNzd29yZA==", "sent Basic ***"),
        ("token=abcdefgh123 ok", "token=*** ok"),
        ("https://hooks.slack.com/services/T1/B2/abcdefSECRET failed", "https://hooks.slack.com/services/T1/B2/*** failed"),
        ("https://h/api?access_token=zzz&x=1", "https://h/api?access_token=***&x=1"),
        ("token ghp_0123456789abcdefghijABCD leaked", "token *** leaked"),
        ("webhook secret: must not be empty", "webhook secret: must not be empty"),
        ("commit 0123456789abcdef0123 refused", "commit 0123456789abcdef0123 refused"),
    ],
)
def test_redact_masks_credentials_and_keeps_the_rest(text: str, shown: str) -> None:
    assert redact(text) == shown
    assert redact(shown) == shown  # idempotent: a stored, redacted text is not changed again


def test_a_registered_alert_url_is_shown_as_its_host_only() -> None:
    add_secret_url("http://127.0.0.1:9/hooks/Discord123/abcdefXYZ")
    assert redact("POST http://127.0.0.1:9/hooks/Discord123/abcdefXYZ: HTTP 500") == "POST http://127.0.0.1:9/***: HTTP 500"
    assert redact_data({"a": ["x https://u:p4ssw0rd@h/r"], "n": 3}) == {"a": ["x https://***@h/r"], "n": 3}


def test_the_log_filter_redacts_the_message_its_arguments_and_the_traceback() -> None:
    try:
        raise RuntimeError("https://u:TRACEBACKSECRET@h/r unreachable")
    except RuntimeError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "poll of %s failed", ("https://u:ARGSECRET@h/r",), None)
        import sys

        record.exc_info = sys.exc_info()
    assert RedactingFilter().filter(record)
    text = logging.Formatter().format(record)
    assert "ARGSECRET" not in text and "TRACEBACKSECRET" not in text and "https://***@h/r" in text
