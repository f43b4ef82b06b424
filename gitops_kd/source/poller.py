"""Poller: runs a source's poll() on an APScheduler interval (or on demand), one poll at a time."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from gitops_kd.source.model import ChangeSet, DesiredState, PollResult
from gitops_kd.spec import FieldError

log = logging.getLogger(__name__)

_INTERVAL_JOB = "gitops-kd-poll"
_NOW_JOB = "gitops-kd-poll-now"


class Pollable(Protocol):
    """What the Poller needs from a source (GitSource satisfies it)."""

    url: str

    def poll(self) -> PollResult: ...

    @property
    def last_good(self) -> DesiredState | None: ...


class Poller:
    """Calls `callback(result)` after every poll of `source`: every `interval` seconds and on
    trigger_now(). Polls never overlap; an exception in poll() becomes an error result (the last good
    desired state is kept) and an exception in the callback is logged; neither stops the schedule.
    """

    def __init__(self, source: Pollable, callback: Callable[[PollResult], None], *, interval: float = 60.0) -> None:
        if interval <= 0:
            raise ValueError(f"Poller: interval must be > 0 seconds, got {interval}")
        self.source = source
        self.callback = callback
        self.interval = interval
        self._poll_lock = threading.Lock()
        self._done = threading.Condition()
        self._polls = 0
        self._last: PollResult | None = None
        self._scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(2)},
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
            timezone=UTC,
        )

    @property
    def polls(self) -> int:
        """How many polls finished (including failed ones)."""
        return self._polls

    @property
    def last(self) -> PollResult | None:
        """The result of the newest finished poll (None before the first)."""
        return self._last

    @property
    def running(self) -> bool:
        return bool(self._scheduler.running)

    def start(self) -> None:
        """Start the schedule; the first poll runs right away."""
        self._scheduler.add_job(
            self._run, "interval", seconds=self.interval, id=_INTERVAL_JOB, next_run_time=datetime.now(UTC), replace_existing=True
        )
        self._scheduler.start()
        log.info("poller started: every %ss", self.interval)

    def stop(self) -> None:
        """Stop the schedule and wait for a running poll to finish."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=True)
            log.info("poller stopped")

    def trigger_now(self) -> None:
        """Ask for a poll as soon as possible (e.g. from a push webhook); it runs after any poll
        in progress, and several triggers before it starts collapse into one."""
        if not self._scheduler.running:
            raise RuntimeError("Poller.trigger_now: the poller is not started")
        self._scheduler.add_job(self._run, "date", run_date=datetime.now(UTC), id=_NOW_JOB, replace_existing=True)

    def poll_once(self) -> PollResult:
        """Run one poll in the calling thread (serialised with scheduled polls) and report it."""
        return self._run()

    def wait_for_polls(self, count: int, timeout: float) -> bool:
        """Block until at least `count` polls finished or `timeout` seconds passed; True if reached."""
        with self._done:
            return self._done.wait_for(lambda: self._polls >= count, timeout=timeout)

    def _run(self) -> PollResult:
        with self._poll_lock:
            try:
                result = self.source.poll()
            except Exception as exc:  # keep polling whatever goes wrong in one poll
                log.exception("poll of %s failed", getattr(self.source, "url", "source"))
                result = PollResult(
                    "",
                    False,
                    self._last_good(),
                    ChangeSet(),
                    (FieldError(getattr(self.source, "url", "source"), "", f"poll failed: {exc}"),),
                    False,
                )
            try:
                self.callback(result)
            except Exception:
                log.exception("poll callback failed for commit %s", result.commit)
            with self._done:
                self._polls += 1
                self._last = result
                self._done.notify_all()
            return result

    def _last_good(self) -> DesiredState | None:
        try:
            return self.source.last_good
        except Exception:
            return None

    def __enter__(self) -> Poller:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
