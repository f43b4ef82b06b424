"""Sender: POSTs bodies to one URL from a background thread: bounded queue (drops the oldest), retries with backoff.

``send(body)`` only enqueues (never blocks a reconcile; a full queue drops its oldest body, counted in
``dropped`` and reported to ``on_drop``). The sender thread POSTs each body; a connection error, timeout, 429
or 5xx is retried with exponential backoff (``base_delay * 2**n``, capped at ``max_delay``) up to
``max_attempts`` attempts in all; any other 4xx is not retried. ``close()`` stops after the body in flight.
"""

from __future__ import annotations

import logging
import queue
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

_STOP = object()


class Sender:
    """Posts bodies to ``url`` (http or https). Counters ``sent``, ``failed``, ``dropped`` are for tests/metrics."""

    def __init__(
        self,
        url: str,
        *,
        what: str = "alert webhook",
        max_attempts: int = 5,
        base_delay: float = 0.5,
        max_delay: float = 10.0,
        timeout: float = 5.0,
        queue_size: int = 1000,
        headers: Mapping[str, str] | None = None,
        on_drop: Callable[[], None] | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"{what} URL {url!r}: must start with http:// or https://")
        if max_attempts < 1:
            raise ValueError(f"{what} max_attempts {max_attempts}: must be at least 1")
        self.url, self.what = url, what
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "User-Agent": "gitops-kd", **dict(headers or {})}
        self.on_drop = on_drop
        self.sent = 0
        self.failed = 0
        self.dropped = 0
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self._stop = threading.Event()
        self._idle = threading.Condition()
        self._busy = 0
        self._thread = threading.Thread(target=self._run, name=what.replace(" ", "-"), daemon=True)
        self._thread.start()

    def send(self, body: bytes) -> bool:
        """Queue one body; False when the sender is closed or the queue was full (its oldest body dropped)."""
        if self._stop.is_set():
            return False
        room = True
        with self._idle:
            while True:
                try:
                    self._queue.put_nowait(body)
                    break
                except queue.Full:
                    try:
                        self._queue.get_nowait()
                    except queue.Empty:
                        continue
                    self._busy -= 1
                    self.dropped += 1
                    room = False
                    log.warning("%s queue full (%d); oldest alert dropped", self.what, self._queue.maxsize)
                    if self.on_drop is not None:
                        self.on_drop()
            self._busy += 1
        return room

    def flush(self, timeout: float) -> bool:
        """Block until every queued body was delivered or given up; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the sender thread (pending bodies are dropped; a retry wait is cut short)."""
        self._stop.set()
        try:
            self._queue.put_nowait(_STOP)
        except queue.Full:
            pass
        self._thread.join(timeout)

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
                log.warning("%s %s: giving up after %d attempt(s): %s", self.what, self.url, attempt, reason)
                return
            delay = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
            log.info("%s %s: attempt %d failed (%s); retrying in %.2fs", self.what, self.url, attempt, reason, delay)
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
