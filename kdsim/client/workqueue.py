"""A de-duplicating key queue with worker threads and per-key retry backoff (client-go's workqueue, reduced).

A key is never processed by two workers at once; adding a key that is already waiting is a no-op;
adding a key while it is being processed queues it once more after the current run; a failing key is
retried after BASE_DELAY * 2**failures (capped at MAX_DELAY); RequeueAfter looks again later.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)

BASE_DELAY = 0.005
MAX_DELAY = 30.0
ROUTINE_STATUSES = frozenset({404, 409})  # conflicts and objects deleted meanwhile: retried, not tracebacks


class RequeueAfter(Exception):
    """Raise from reconcile to process the key again after `seconds` (not counted as a failure)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"requeue after {seconds}s")
        self.seconds = seconds


class WorkQueue:
    """Keys in, reconcile(key) out, on `workers` threads."""

    def __init__(self, reconcile: Callable[[str], None], *, name: str, workers: int = 1) -> None:
        self.name = name
        self._reconcile = reconcile
        self._workers = workers
        self._cond = threading.Condition()
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._delayed: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._failures: dict[str, int] = {}
        self._threads: list[threading.Thread] = []
        self._stopping = False

    def add(self, key: str) -> None:
        """Queue `key` now (no-op if it is already waiting)."""
        with self._cond:
            self._add_locked(key)

    def add_after(self, key: str, seconds: float) -> None:
        """Queue `key` once `seconds` have passed."""
        with self._cond:
            if self._stopping:
                return
            heapq.heappush(self._delayed, (time.monotonic() + seconds, next(self._seq), key))
            self._cond.notify()

    def start(self) -> None:
        """Start the worker threads."""
        for i in range(self._workers):
            t = threading.Thread(target=self._run, name=f"kdsim-{self.name}-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop taking work; wait for running reconciles to finish (up to `timeout`)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()

    def _add_locked(self, key: str) -> None:
        if self._stopping or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
            self._cond.notify()

    def _get(self) -> str | None:
        with self._cond:
            while True:
                if self._stopping:
                    return None
                now = time.monotonic()
                while self._delayed and self._delayed[0][0] <= now:
                    _, _, key = heapq.heappop(self._delayed)
                    self._add_locked(key)
                if self._queue:
                    key = self._queue.popleft()
                    self._processing.add(key)
                    self._dirty.discard(key)
                    return key
                self._cond.wait(self._delayed[0][0] - now if self._delayed else None)

    def _finish(self, key: str, retry_after: float | None, failed: bool) -> None:
        with self._cond:
            self._processing.discard(key)
            failures = self._failures.pop(key, 0)
            if failed:
                self._failures[key] = failures + 1
                retry_after = min(MAX_DELAY, BASE_DELAY * (2 ** failures))
            if key in self._dirty and not self._stopping:
                self._queue.append(key)
                self._cond.notify()
        if retry_after is not None:
            self.add_after(key, retry_after)

    def _run(self) -> None:
        while (key := self._get()) is not None:
            retry_after: float | None = None
            failed = False
            try:
                self._reconcile(key)
            except RequeueAfter as req:
                retry_after = req.seconds
            except ApiException as exc:
                if exc.status not in ROUTINE_STATUSES:
                    log.exception("%s: reconcile of %s failed; retrying with backoff", self.name, key)
                else:  # a stale read or a vanished object: a line, as controller-runtime's "Reconciler error"
                    log.info("%s: reconcile of %s: %s %s; retrying with backoff", self.name, key, exc.status, exc.reason)
                failed = True
            except Exception:  # noqa: BLE001 - a reconcile failure must never kill the worker
                log.exception("%s: reconcile of %s failed; retrying with backoff", self.name, key)
                failed = True
            self._finish(key, retry_after, failed)
