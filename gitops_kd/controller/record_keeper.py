"""RecordKeeper: the leader's GitOpsKDSource is checked before it is adopted, then kept equal to what was applied."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from gitops_kd.constants import RECORD_CHECK_INTERVAL, RECORD_RETRY_CAP, STALL_RECORD_UNTRUSTED
from gitops_kd.controller.instance import InstanceRecord
from gitops_kd.controller.record_check import Verdict, check_record, cluster_commits
from gitops_kd.observe.collector import Collector
from gitops_kd.source import GitSource
from gitops_kd.source.errors import SourceError
from kubeplumb.names import WARNING
from kubeplumb.workqueue import RequeueAfter

log = logging.getLogger(__name__)

FIRST_RETRY = 0.5  # seconds before the first retry of a failed record write (doubling up to RECORD_RETRY_CAP)


class RecordKeeper:
    """Guards the instance record (controller/instance.py) of a leading controller.

    establish() checks the record load() found against Git and the KDRollouts (controller/record_check.py) and
    adopts it into the source only if it checks out; otherwise the record is Stalled RecordUntrusted and
    `trusted` stays False: gate() holds every reconcile, and the keeper's thread re-reads and re-checks it until
    it checks out (fixed by hand, or deleted: then re-established from the cluster) and calls `on_trusted`.
    Once trusted the thread re-reads the object every RECORD_CHECK_INTERVAL (an out-of-band edit is written
    back, a deleted object created again) and retries a failed write with backoff; gate() holds every plan
    while the cluster does not hold what was applied.

    Sharding (``leads``: does this replica hold shard 0, whose holder writes the record): a replica that does not
    lead follows: it writes nothing, and gate() holds its plans until the record in the cluster holds the commit
    it applies (``applied``), so the record lands before any step of a commit, whichever replica runs it. One
    that starts leading re-reads and re-checks the record first, as a new leader does at start, then calls
    ``on_lead``.

    ``serial`` (the planning lock) is held around a re-check, its adoption and ``on_lead``/``on_trusted``: the
    fleet reconcile chooses and records its commit under the same lock, so a commit accepted while the record is
    re-read can neither be overwritten by the older record's baseline (a record whose baseline does not descend
    from its applied commit, which every replica then distrusts) nor run a step before the record holds it.
    """

    def __init__(
        self,
        record: InstanceRecord,
        source: GitSource,
        collector: Collector,
        *,
        on_trusted: Callable[[], None],
        leads: Callable[[], bool] | None = None,
        on_lead: Callable[[], None] | None = None,
        applied: Callable[[], str | None] | None = None,
        serial: threading.Lock | None = None,
        on_git: Callable[[int, int], None] | None = None,
    ) -> None:
        self.record, self.source = record, source
        self._on_git = on_git  # (failing polls, cache recoveries) after a failed read of Git here (the metrics)
        self._serial = serial or threading.Lock()
        self._collector = collector
        self._on_trusted = on_trusted
        self._leads, self._on_lead, self._applied = leads, on_lead, applied
        self._read_lock = threading.Lock()
        self._read: tuple[float, str] = (-FIRST_RETRY, "")  # a follower's last read: (monotonic, applied commit)
        self.trusted = False
        self.untrusted_since: float | None = None  # since when no plan may run (None while trusted or not started)
        self.leading = leads is None  # this replica writes the record (re-checked since it started leading)
        self.checking = False  # sharding: re-reading and re-checking the record after taking shard 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reported = ""

    def establish(self) -> bool:
        """Check the record the last load() found; adopt it (True) or stall the record (False). Raises nothing."""
        try:
            self.source.fetch_counted()  # a corrupt cache found here is cloned again (GitSource.fetch)
        except SourceError as exc:  # Git unreadable: GitUnreadable (counted as a failed poll), retried; not distrust
            self._git_unreadable(exc.message)
            return False
        except Exception:  # noqa: BLE001 - anything else: the check below reports it
            pass
        try:
            try:
                verdict = self._check()
            except Exception as exc:  # noqa: BLE001 - a corrupt Git cache is cloned again and checked once more
                if not self.source.repair(exc):
                    raise
                verdict = self._check()
        except Exception as exc:  # noqa: BLE001 - Git or the watch caches unreadable: cannot know, so do not trust
            reason = str(exc).splitlines()[0] if str(exc) else repr(exc)
            verdict = Verdict(problem=f"cannot check the record against Git and the KDRollouts: {reason}")
        if verdict.problem:
            self._distrust(verdict.problem)
            return False
        if self.record.recorded is None or not self.record.recorded.baseline:
            if verdict.baseline:
                log.warning(
                    "%s is empty: force-push baseline %s re-established from the KDRollouts",
                    self.record.describe,
                    verdict.baseline[:12],
                )
        self.source.adopt(verdict.applied, verdict.baseline)
        self.leading = self._leads is None or self._leads()
        self.record.update(distrust="", **({"baseline": verdict.baseline} if verdict.baseline else {}))
        self.trusted = True
        self.untrusted_since = None
        self._reported = ""
        return True

    def _check(self) -> Verdict:
        return check_record(
            self.source.git,
            self.record.recorded,
            cluster_commits(self._rollouts()),
            allow_force_push=self.source.trust.allow_force_push,
        )

    def _rollouts(self) -> list[Mapping[str, Any]]:
        """The raw KDRollouts in the scope (raises until the watch caches have synced: they are not known yet)."""
        if not self._collector.wait_synced(0):
            raise RuntimeError("the watch caches have not synced yet")
        return [c.rollout.raw for c in self._collector.snapshot().clusters.values() if c.rollout is not None]

    def _git_unreadable(self, message: str) -> None:
        """The record cannot be checked because Git cannot be read: nothing is planned (not trusted yet), and the
        record says GitUnreadable with the poll count and Git's error (no RecordUntrusted: the record is not
        the problem, and deleting it would not help)."""
        self.trusted = False
        if message != self._reported:
            log.error("not planning from %s: Git cannot be read: %s", self.record.describe, message.splitlines()[0])
            self._reported = message
        self.record.update(distrust="", git_failures=self.source.failing_polls, git_error=self.source.last_error or message)
        if self._on_git is not None:
            self._on_git(self.source.failing_polls, self.source.recoveries)

    def _distrust(self, problem: str) -> None:
        self.trusted = False
        if self.untrusted_since is None:
            self.untrusted_since = time.monotonic()
        message = f"not planning from {self.record.describe}: {problem}"
        if problem != self._reported:
            log.error("%s", message)
            self.record.event(STALL_RECORD_UNTRUSTED, message, type_=WARNING)
            self._reported = problem
        self.record.update(distrust=message)

    def gate(self, *, choosing: bool = False) -> None:
        """Raise RequeueAfter unless plans may run: the record is trusted and the cluster holds what was applied.
        ``choosing``: the fleet reconcile before it chooses its commit; a follower lets it through (it gates again
        once it chose): a follower whose applied commit is older than the record's would never move on."""
        if not self.trusted:
            raise RequeueAfter(RECORD_CHECK_INTERVAL)
        if not self.leading:
            if not choosing:
                self._follow_gate()
            return
        if self.record.pending:
            self.record.flush()
            if self.record.pending:
                raise RequeueAfter(FIRST_RETRY)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gitops-kd-record", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        failures = 0
        delay = FIRST_RETRY if self.record.pending else RECORD_CHECK_INTERVAL
        while not self._stop.wait(delay):
            if not self.trusted:
                delay = RECORD_CHECK_INTERVAL
                with self._serial:
                    if self._recheck():
                        self._on_trusted()
                continue
            if self._leads is not None and not self._follow_or_lead():
                delay = RECORD_CHECK_INTERVAL
                continue
            try:
                held = self.record.refresh()
            except Exception as exc:  # noqa: BLE001 - the API unreachable: retry with backoff
                log.warning("%s cannot be read (%s); retrying", self.record.describe, exc)
                held = False
            failures = 0 if held else failures + 1
            delay = RECORD_CHECK_INTERVAL if held else min(RECORD_RETRY_CAP, FIRST_RETRY * 2 ** (failures - 1))

    def _follow_gate(self) -> None:
        """A follower: raise RequeueAfter until the record in the cluster holds the commit this replica applies
        (read at most every FIRST_RETRY seconds)."""
        want = self._applied() if self._applied is not None else None
        if not want:
            return
        with self._read_lock:
            at, recorded = self._read
            if recorded != want and time.monotonic() - at >= FIRST_RETRY:
                try:
                    recorded = self.record.recorded_in_cluster()
                except Exception as exc:  # noqa: BLE001 - the API unreachable: wait
                    log.warning("%s cannot be read (%s); retrying", self.record.describe, exc)
                self._read = (time.monotonic(), recorded)
        if recorded != want:
            raise RequeueAfter(FIRST_RETRY)

    def writes(self) -> bool:
        """Sharding: may this replica write the record while it holds shard 0 (while establishing it at start or
        re-checking it after taking shard 0, and once it leads; never while it follows on what it last saw)."""
        return not self.trusted or self.leading or self.checking

    def _follow_or_lead(self) -> bool:
        """Sharding: True when this replica leads the record (re-checked since it started leading)."""
        assert self._leads is not None
        if not self._leads():
            self.leading = False
            return False
        if self.leading:
            return True
        with self._serial:
            self.checking = True
            try:
                led = self._recheck() and self.leading
            finally:
                self.checking = False
            if led:
                log.info("%s: this replica holds shard 0 now and writes the record", self.record.describe)
                if self._on_lead is not None:
                    self._on_lead()
        return False

    def _recheck(self) -> bool:
        try:
            self.record.load()
        except Exception as exc:  # noqa: BLE001 - retried at the next interval
            log.warning("%s cannot be read (%s); retrying", self.record.describe, exc)
            return False
        return self.establish()
