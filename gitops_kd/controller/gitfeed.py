"""GitFeed: Git's side of the manager — poll results into the candidate commit, the instance record, reverts."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from gitops_kd.controller.acting import KEY
from gitops_kd.controller.commits import Commits
from gitops_kd.controller.instance import NOT_READY_AFTER_FAILED_POLLS, InstanceRecord
from gitops_kd.controller.record_keeper import RecordKeeper
from gitops_kd.controller.refusals import RefusalReporter
from gitops_kd.observe.collector import Collector
from gitops_kd.server.metrics import poll_result_label
from gitops_kd.source import GitSource, PollResult
from gitops_kd.source.revert import RevertError, push_revert_result
from gitops_kd.status.events import GIT_CACHE_RECOVERED, GIT_UNREADABLE
from kubeplumb.names import WARNING
from kubeplumb.workqueue import WorkQueue

log = logging.getLogger(__name__)

RECORD_RETRY = 1.0  # seconds between attempts to read the instance record at start


class GitFeed:
    """Turns each poll into the candidate commit (then wakes the fleet key), keeps the instance record's Git facts,
    loads what was applied at start, and pushes failurePolicy reverts (``trigger_poll`` polls right after)."""

    def __init__(
        self,
        *,
        source: GitSource,
        commits: Commits,
        collector: Collector,
        queue: WorkQueue,
        refusals: RefusalReporter,
        record: InstanceRecord | None,
        metrics: Any,
        trigger_poll: Callable[[], object],
    ) -> None:
        self._source, self._commits, self._collector, self._queue = source, commits, collector, queue
        self._refusals, self._record, self._metrics = refusals, record, metrics
        self._trigger_poll = trigger_poll

    def push_revert(self, commit: str, reason: str) -> tuple[str, bool]:
        """failurePolicy revert-commit: push a revert of `commit` to the followed branch, then poll at once."""
        trust = getattr(self._source, "trust", None)
        if trust is not None and trust.verifies_signatures:
            raise RevertError("commit signatures are verified: gitops-kd's own revert would be unsigned and refused")
        result = push_revert_result(self._source, commit, message=reason)
        log.warning(
            "revert %s of commit %s %s: %s",
            result.sha[:12],
            commit[:12],
            "pushed" if result.pushed else "already on the branch",
            reason.splitlines()[0],
        )
        self._trigger_poll()
        return result.sha, result.pushed

    def load_record(self, keeper: RecordKeeper | None, stopping: threading.Event) -> bool:
        """Read the instance record until it works (False if stopped first); the keeper checks it before anything
        of it is adopted (controller/record_keeper.py)."""
        if self._record is None or keeper is None:
            return True
        while not stopping.is_set():
            try:
                self._record.load()
                break
            except Exception as exc:  # noqa: BLE001 - nothing is planned until the cluster's record is known
                log.warning("%s cannot be read (%s); not reconciling until it can", self._record.describe, exc)
                stopping.wait(RECORD_RETRY)
        else:
            return False
        if keeper.establish():
            recorded = self._record.record
            log.info(
                "%s: applied %s, force-push baseline %s",
                self._record.describe,
                recorded.applied[:12] or "-",
                recorded.baseline[:12] or "-",
            )
        self._commits.marked = None
        return True

    def load_applied(self) -> None:
        """Start from the commit the source (or the record it adopted) says was applied."""
        commit = self._source.applied_commit
        if commit and self._metrics is not None:
            self._metrics.set_applied_commit(commit)
        if commit and self._commits.applied is None:
            try:
                self._commits.applied = self._source.desired_at(commit)
            except Exception as exc:  # noqa: BLE001 - a vanished or now-invalid commit: start from the next one
                log.warning("applied commit %s cannot be read back (%s); waiting for the next accepted commit", commit, exc)

    def on_poll(self, result: PollResult) -> None:
        first = not self._commits.polled.is_set()
        try:
            failed = not result.changed and not result.accepted and any(e.file == self._source.url for e in result.errors)
            if self._metrics is not None:
                self._metrics.record_poll(poll_result_label(changed=result.changed, accepted=result.accepted, failed=failed))
                self._metrics.set_git_health(self._source.failing_polls, self._source.recoveries)
            self._record_poll(result, failed)
            if not result.accepted and not failed:  # a repository that cannot be read refuses no commit
                self._refusals.source_refused(result, self._snapshot_or_none())
            elif result.desired is not None and self._commits.offer(result.desired):
                log.info("commit %s accepted by the Git source", result.desired.commit[:12])
        finally:
            self._commits.polled.set()  # only now: a fleet reconcile woken before this line would miss the candidate
            if first or result.changed or not result.accepted or not self._commits.settled():
                self._queue.add(KEY)  # else the poll found nothing new: the fleet key's own resync looks again

    def _record_poll(self, result: PollResult, failed: bool) -> None:
        """The poll's transition of the instance record (Git health, a refusal by the source)."""
        if self._record is None:
            return
        source, before = self._source, self._record.record
        if source.recoveries > before.recoveries:
            self._record.event(
                GIT_CACHE_RECOVERED,
                f"the local Git cache was corrupt and was cloned again: "
                f"{source.last_recovery.splitlines()[0] if source.last_recovery else ''}",
                type_=WARNING,
            )
        if failed and source.failing_polls == NOT_READY_AFTER_FAILED_POLLS:
            self._record.event(
                GIT_UNREADABLE,
                f"{source.failing_polls} polls in a row could not read {source.url}: "
                f"{source.last_error.splitlines()[0] if source.last_error else ''}",
                type_=WARNING,
            )
        changes: dict[str, Any] = {
            "git_failures": source.failing_polls,
            "git_error": source.last_error,
            "recoveries": source.recoveries,
            "kubedirector": self._collector.flavour.describe(),
        }
        if result.changed and not result.accepted and not failed:
            changes.update(attempted=result.commit, refusal="\n".join(str(e) for e in result.errors))
        self._record.update(**changes)

    def _snapshot_or_none(self) -> Any:
        try:
            return self._collector.snapshot()
        except Exception:  # noqa: BLE001 - only used to address Events
            return None
