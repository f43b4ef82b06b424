"""WebhookNotifier: JSON POSTs of drift alerts to a URL from a background thread, with bounded retries.

``notify(payload)`` only enqueues (never blocks a reconcile; a full queue drops the alert with a log line).
The sender thread POSTs each payload as ``application/json``; a connection error, timeout, 429 or 5xx is
retried with exponential backoff (``base_delay * 2**n``, capped at ``max_delay``) up to ``max_attempts``
attempts in all; any other 4xx is not retried. ``close()`` stops after the payload in flight.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

_STOP = object()


class WebhookNotifier:
    """Posts alerts to ``url`` (http or https). Counters ``sent``, ``failed``, ``dropped`` are for tests/metrics."""

    def __init__(self, url: str, *, max_attempts: int = 5, base_delay: float = 0.5, max_delay: float = 10.0,
                 timeout: float = 5.0, queue_size: int = 1000, headers: Mapping[str, str] | None = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"drift webhook URL {url!r}: must start with http:// or https://")
        if max_attempts < 1:
            raise ValueError(f"drift webhook max_attempts {max_attempts}: must be at least 1")
        self.url = url
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "User-Agent": "gitops-kd", **dict(headers or {})}
        self.sent = 0
        self.failed = 0
        self.dropped = 0
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self._stop = threading.Event()
        self._idle = threading.Condition()
        self._busy = 0
        self._thread = threading.Thread(target=self._run, name="drift-webhook", daemon=True)
        self._thread.start()

    def notify(self, payload: Mapping[str, Any]) -> bool:
        """Queue one payload; False (and a warning) when the queue is full or the notifier is closed."""
        if self._stop.is_set():
            return False
        body = json.dumps(payload, sort_keys=True, default=str).encode()
        with self._idle:
            try:
                self._queue.put_nowait(body)
            except queue.Full:
                self.dropped += 1
                log.warning("drift webhook queue full (%d); alert dropped", self._queue.maxsize)
                return False
            self._busy += 1
        return True

    def flush(self, timeout: float) -> bool:
        """Block until every queued payload was delivered or given up; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the sender thread (pending payloads are dropped; a retry wait is cut short)."""
        self._stop.set()
        try:
            self._queue.put_nowait(_STOP)
        except queue.Full:
            pass
        self._thread.join(timeout)

    # -- sender ------------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            body = self._queue.get()
            if body is _STOP:
                break
            try:
                self._deliver(body)
            finally:
                with self._idle:
                    self._busy -= 1
                    self._idle.notify_all()

    def _deliver(self, body: bytes) -> None:
        for attempt in range(1, self.max_attempts + 1):
            retry, reason = self._post(body)
            if not retry and reason is None:
                self.sent += 1
                return
            if not retry or attempt == self.max_attempts:
                self.failed += 1
                log.warning("drift webhook %s: giving up after %d attempt(s): %s", self.url, attempt, reason)
                return
            delay = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
            log.info("drift webhook %s: attempt %d failed (%s); retrying in %.2fs", self.url, attempt, reason, delay)
            if self._stop.wait(delay):
                return

    def _post(self, body: bytes) -> tuple[bool, str | None]:
        """(retry?, failure reason or None on success)."""
        request = urllib.request.Request(self.url, data=body, headers=self.headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - configured URL
                response.read()
            return False, None
        except urllib.error.HTTPError as exc:
            return exc.code == 429 or exc.code >= 500, f"HTTP {exc.code} {exc.reason}"
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            return True, f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
