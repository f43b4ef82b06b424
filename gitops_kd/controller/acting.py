"""Acting: select a plan's next runnable action, execute it, hold what changed nothing, wait to read our write."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gitops_kd.controller.select import Selection, select
from gitops_kd.execute import Executor, Outcome
from gitops_kd.execute.fence import NotLeading
from gitops_kd.observe.collector import Collector
from gitops_kd.plan.actions import Action, ApplyApp, Plan, Wait
from gitops_kd.plan.focus import FLEET_KEY, WorkKey, owner
from kubeplumb.workqueue import WorkQueue

log = logging.getLogger(__name__)

READ_YOUR_WRITES_TIMEOUT = 5.0
IDLE_RESYNC = 30.0  # seconds before a key with nothing runnable looks again (unless something changes first)
NOOP_HOLD = 2.0  # seconds an action that changed nothing is not selected again
FENCED_RETRY = 1.0  # seconds before a reconcile whose write the fence refused looks again
KEY = str(FLEET_KEY)


@dataclass(frozen=True)
class Result:
    """What one reconcile asks of the queue (controller-runtime's Result): look again after ``requeue_after``
    seconds, or (None) only when something changes. An exception is an error: retried with backoff."""

    requeue_after: float | None = None


DONE = Result()

KeyFence = Callable[[WorkKey], bool]  # may this replica act for this work key now (sharding: its Lease is fresh)


def _every_key(_work: WorkKey) -> bool:
    return True


class Actor:
    """Runs one action per reconcile for a work key; ``after_part_action`` is called after each action of a key
    other than the fleet's (the fleet reconcile looks again, debounced). ``per_key``: an ApplyApp selected by
    another key is left to the app's key."""

    def __init__(
        self,
        executor: Executor,
        collector: Collector,
        queue: WorkQueue,
        *,
        per_key: bool,
        metrics: Any = None,
        on_action: Callable[[Action, Outcome], None] | None = None,
        after_part_action: Callable[[], None] = lambda: None,
    ) -> None:
        self._executor, self._collector, self._queue = executor, collector, queue
        self._per_key, self._metrics, self._on_action = per_key, metrics, on_action
        self.after_part_action = after_part_action
        self.key_fence: KeyFence = _every_key
        self._acting = threading.local()  # the work key whose action this thread executes (the write-time fence)
        self._lock = threading.Lock()
        self._hold: dict[Action, float] = {}
        self._noop: dict[str, Action] = {}  # per work key: the last action that changed nothing
        self._running: dict[WorkKey, int] = {}  # work key -> actions of it in flight (a shard drains them)
        self.actions_executed = 0

    def select(self, plan: Plan) -> Selection:
        mono = time.monotonic()
        with self._lock:
            self._hold = {a: t for a, t in self._hold.items() if t > mono}
            return select(plan, dict(self._hold), mono)

    def acting_for(self) -> WorkKey:
        """The work key whose action this thread is executing (the fleet's outside an action): a shard's executor
        fence asks it at each write."""
        work: WorkKey = getattr(self._acting, "work", FLEET_KEY)
        return work

    def in_flight(self) -> list[WorkKey]:
        """The work keys with an action in flight (registered before the key fence is asked, so a shard that starts
        draining after that check still sees it here)."""
        with self._lock:
            return list(self._running)

    def wake(self, work: WorkKey) -> None:
        """Queue ``work``'s key (its action is next)."""
        self._queue.add(str(work))

    def act(self, key: str, plan: Plan, idle: float | None) -> Result:
        """Execute the next runnable action of ``plan`` for work key ``key``; with none, look again after the
        plan's shortest wait, else ``idle`` seconds (None: only when something changes)."""
        choice = self.select(plan)
        if choice.action is None:
            return Result(choice.requeue_after if choice.requeue_after is not None else idle)
        action = choice.action
        if self._per_key and isinstance(action, ApplyApp) and owner(action) != WorkKey.parse(key):
            self._queue.add(str(owner(action)))  # the app key applies it; this key waits for its change
            return Result(IDLE_RESYNC)
        work = owner(action)
        self._track(work, 1)
        try:
            if not self.key_fence(work):
                log.warning("not acting for %s: this replica does not hold its key now", work)
                return Result(FENCED_RETRY)
            self._acting.work = work
            try:
                outcome = self._execute(action)
            finally:
                self._acting.work = FLEET_KEY
        finally:
            self._track(work, -1)
        if outcome is None:
            return Result(FENCED_RETRY)
        if outcome.expect and not self._collector.wait_for(outcome.expect, READ_YOUR_WRITES_TIMEOUT):
            log.warning("cache did not show the effect of '%s' within %ss", action.describe(), READ_YOUR_WRITES_TIMEOUT)
        self._remember(key, action, outcome)
        self._queue.add(key)
        if key != KEY:
            self.after_part_action()
        return DONE

    def _track(self, work: WorkKey, delta: int) -> None:
        with self._lock:
            count = self._running.get(work, 0) + delta
            if count > 0:
                self._running[work] = count
            else:
                self._running.pop(work, None)

    def _execute(self, action: Action) -> Outcome | None:
        """The action's outcome; None when the fence refused its write (nothing was done)."""
        try:
            outcome = self._executor.execute(action)
        except NotLeading as exc:
            log.warning("%s", exc)
            return None
        except Exception:
            self._count_step(action, "error")
            raise
        self._count_step(action, "failed" if outcome.failed else ("success" if outcome.changed else "noop"))
        self.actions_executed += 1
        if self._on_action is not None:
            self._on_action(action, outcome)
        return outcome

    def _remember(self, key: str, action: Action, outcome: Outcome) -> None:
        """Hold an action that failed or changed nothing for a moment, so the key does not spin on it."""
        with self._lock:
            if outcome.requeue_after is not None and (outcome.failed or not outcome.changed):
                self._hold[action] = time.monotonic() + outcome.requeue_after
            elif not outcome.changed and not outcome.failed:
                # Already done, yet planned: the cache may lag (it catches up and re-plans) or the plan and the
                # cluster disagree. Either way do not spin on it: hold this exact action for a moment.
                if self._noop.get(key) == action:
                    log.warning("'%s' planned again although its effect is there (%s)", action.describe(), outcome.message)
                self._noop[key] = action
                self._hold[action] = time.monotonic() + NOOP_HOLD
            if outcome.changed:
                self._noop.pop(key, None)

    def _count_step(self, action: Action, result: str) -> None:
        if self._metrics is not None and not isinstance(action, Wait):
            self._metrics.upgrade_step(type(action).__name__, result)
