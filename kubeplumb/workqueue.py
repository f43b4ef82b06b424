"""A de-duplicating, rate-limited key queue with worker threads (the shape of client-go's workqueue).

Usage::

    def reconcile(key: str) -> None:          # "namespace/name"; raise to retry with backoff
        ...                                   # or raise RequeueAfter(2.0) to look again later

    queue = WorkQueue(reconcile, name="statefulset", workers=1)
    queue.start()
    informer.add_handler(lambda event, obj, old: queue.add(object_key(obj)))
    ...
    queue.stop()

Guarantees, as in client-go: a key is never processed by two workers at once; adding a key that is
already waiting is a no-op; adding a key while it is being processed queues it once more after the
current run; a key added for later while it already waits for later keeps the earlier of the two times (one
timer per key, as client-go's delaying queue: a key that re-arms itself each run cannot multiply); a failing
key is retried after base_delay * 2**failures (capped at max_delay) and its failure count is forgotten after a
successful run. A 404 or 409 from the API server (an object deleted meanwhile, a stale read) is logged as one
line, not a traceback, as controller-runtime's "Reconciler error".
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from kubeplumb.rest import status_of

log = logging.getLogger(__name__)

ROUTINE_STATUSES = frozenset({404, 409})  # conflicts and objects deleted meanwhile: retried, not tracebacks


class RequeueAfter(Exception):
    """Raise from reconcile to process the key again after `seconds` (not counted as a failure)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"requeue after {seconds}s")
        self.seconds = seconds


class WorkQueue:
    """Keys in, reconcile(key) out, on `workers` threads, with per-key exponential backoff on failure."""

    def __init__(
        self, reconcile: Callable[[str], None], *, name: str, workers: int = 1, base_delay: float = 0.005, max_delay: float = 30.0
    ) -> None:
        self.name = name
        self._reconcile = reconcile
        self._workers = workers
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._cond = threading.Condition()
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._delayed: list[tuple[float, int, str]] = []  # a heap; entries whose time is not _ready_at[key] are stale
        self._ready_at: dict[str, float] = {}  # per key waiting for later: when it is due (the earliest asked)
        self._seq = itertools.count()
        self._failures: dict[str, int] = {}
        self._threads: list[threading.Thread] = []
        self._stopping = False

    # -- producers ---------------------------------------------------------------------------------
    def add(self, key: str) -> None:
        """Queue `key` now (no-op if it is already waiting)."""
        with self._cond:
            self._add_locked(key)

    def add_after(self, key: str, seconds: float) -> None:
        """Queue `key` once `seconds` have passed."""
        if seconds <= 0:
            self.add(key)
            return
        ready = time.monotonic() + seconds
        with self._cond:
            waiting = self._ready_at.get(key)
            if self._stopping or (waiting is not None and waiting <= ready):
                return
            self._ready_at[key] = ready
            heapq.heappush(self._delayed, (ready, next(self._seq), key))
            self._cond.notify()

    def add_rate_limited(self, key: str) -> None:
        """Queue `key` after its exponential backoff delay, counting one more failure."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        self.add_after(key, min(self._max_delay, self._base_delay * (2**failures)))

    def forget(self, key: str) -> None:
        """Reset the failure count of `key`."""
        with self._cond:
            self._failures.pop(key, None)

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker threads."""
        for i in range(self._workers):
            t = threading.Thread(target=self._run, name=f"workqueue-{self.name}-{i}", daemon=True)
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

    # -- internals ---------------------------------------------------------------------------------
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
                    ready, _, key = heapq.heappop(self._delayed)
                    if self._ready_at.get(key) == ready:
                        del self._ready_at[key]
                        self._add_locked(key)
                if self._queue:
                    key = self._queue.popleft()
                    self._processing.add(key)
                    self._dirty.discard(key)
                    return key
                wait = self._delayed[0][0] - now if self._delayed else None
                self._cond.wait(wait)

    def _done(self, key: str) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty and not self._stopping:
                self._queue.append(key)
                self._cond.notify()

    def _run(self) -> None:
        while (key := self._get()) is not None:
            try:
                self._reconcile(key)
            except RequeueAfter as req:
                self.forget(key)
                self.add_after(key, req.seconds)
            except Exception as exc:  # noqa: BLE001 - a reconcile failure must never kill the worker
                if status_of(exc) in ROUTINE_STATUSES:
                    log.info(
                        "%s: reconcile of %s: %s %s; retrying with backoff",
                        self.name,
                        key,
                        status_of(exc),
                        getattr(exc, "reason", ""),
                    )
                else:
                    log.exception("%s: reconcile of %s failed; retrying with backoff", self.name, key)
                self.add_rate_limited(key)
            else:
                self.forget(key)
            finally:
                self._done(key)
