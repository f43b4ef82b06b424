"""InstanceRecord: the controller instance's GitOpsKDSource, read before the first reconcile and written by the leader."""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from gitops_kd.execute.events import EventRecorder
from gitops_kd.execute.fence import Fence, FencedRest, NotLeading
from gitops_kd.status.events import NORMAL
from gitops_kd.status.source import API_VERSION, KIND, PLURAL, SourceRecord, source_status

log = logging.getLogger(__name__)

NOT_READY_AFTER_FAILED_POLLS = 3  # /readyz and the Ready condition turn false after this many failed Git polls
CONFLICT_RETRIES = 3


def _utcnow() -> datetime:
    return datetime.now(UTC)


class InstanceRecord:
    """The GitOpsKDSource `namespace/name` (name = the Lease's): what this controller instance applied.

    load() reads it (creating it empty on first use). update(**changes) is one transition: the record
    changes and, if it did, exactly one write of the status with the last seen resourceVersion as
    precondition (a 409 re-reads the object and, while this replica still leads, writes the same record on top
    of it). A failed write is logged and retried at the next update or flush(). Thread-safe.

    Fenced like the executor (execute/fence.py): every write, the record's Events included, first checks
    ``fence()`` (set_fence; leader election: a Lease renewed within the renew deadline). A deposed or thawed
    replica writes nothing: after a 409 it re-reads and stops, never putting its view on top.
    """

    def __init__(self, api_client: ApiClient, *, namespace: str, name: str, url: str, branch: str,
                 now: Callable[[], datetime] = _utcnow) -> None:
        self.namespace, self.name = namespace, name
        self._rest = FencedRest(api_client)
        self._now = now
        self.events = EventRecorder(self._rest, now)
        self._lock = threading.RLock()
        self._object: dict[str, Any] | None = None  # as last read or written (resourceVersion, status)
        self._record = SourceRecord(url=url, branch=branch)
        self._url, self._branch = url, branch
        self.writes = 0
        self.recorded: SourceRecord | None = None  # what load() found (None: the object was new)

    def set_fence(self, fence: Fence) -> None:
        """Check ``fence()`` right before each write (execute.fence.NotLeading is logged, nothing written)."""
        self._rest.fence = fence

    @property
    def record(self) -> SourceRecord:
        return self._record

    @property
    def describe(self) -> str:
        return f"{KIND} {self.namespace}/{self.name}"

    def load(self) -> SourceRecord | None:
        """Read (or create) the object; returns the record it held, None if it was new or held another
        repository or branch (then nothing of it is adopted). Raises ApiException if the API fails."""
        with self._lock:
            obj = self._rest.get_or_none(API_VERSION, PLURAL, self.namespace, self.name)
            if obj is None:
                body = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": self.name,
                        "namespace": self.namespace, "labels": {"app.kubernetes.io/part-of": "gitops-kd"}},
                        "spec": {}}
                try:
                    obj = self._rest.create(API_VERSION, PLURAL, self.namespace, body)
                except ApiException as exc:
                    if exc.status != 409:
                        raise
                    obj = self._rest.get(API_VERSION, PLURAL, self.namespace, self.name)
                log.info("%s: created", self.describe)
            self._object = obj
            found = SourceRecord.from_status(obj.get("status"))
            if not found.url and not found.applied:
                self.recorded = None
            elif (found.url, found.branch) != (self._url, self._branch):
                log.warning("%s records %s@%s, this instance follows %s@%s: not adopting its commits",
                            self.describe, found.url, found.branch, self._url, self._branch)
                self.recorded = None
            else:
                self.recorded = found
                self._record = found
            self._flush()
            return self.recorded

    def update(self, **changes: Any) -> bool:
        """Apply one transition; True if the record changed (and a write was attempted)."""
        with self._lock:
            new = self._record.with_changes(**changes)
            if new == self._record:
                return False
            self._record = new
            self._flush()
            return True

    def flush(self) -> None:
        """Write the record if the last write failed."""
        with self._lock:
            self._flush()

    def event(self, reason: str, message: str, *, type_: str = NORMAL) -> None:
        """An Event about the instance object (best effort)."""
        obj = self._object or {"metadata": {"namespace": self.namespace, "name": self.name}}
        self.events.record({**obj, "apiVersion": API_VERSION, "kind": KIND}, reason, message, type_=type_)

    def _flush(self) -> None:
        if self._object is None:
            return
        current = self._object.get("status") or {}
        generation = self._object.get("metadata", {}).get("generation") or 1
        status = source_status(self._record, current, generation=generation,
                               not_ready_after=NOT_READY_AFTER_FAILED_POLLS, now=self._now())
        if status == current:
            return
        for _ in range(CONFLICT_RETRIES):
            body = copy.deepcopy(self._object)
            body["status"] = status
            try:
                self._object = self._rest.replace(API_VERSION, PLURAL, self.namespace, self.name, body,
                                                  subresource="status")
                self.writes += 1
                return
            except NotLeading as exc:
                log.warning("%s", exc)
                return
            except ApiException as exc:
                if exc.status == 409:  # someone wrote since our read: the leader writes on top, a deposed one stops
                    if not self._reread_after_conflict():
                        return
                    continue
                log.warning("%s: status write failed (%s); retried at the next change", self.describe, exc.reason)
                return
            except Exception as exc:  # noqa: BLE001 - the API unreachable: keep the record, retry later
                log.warning("%s: status write failed (%s); retried at the next change", self.describe, exc)
                return
        log.warning("%s: status write conflicted %d times; retried at the next change", self.describe,
                    CONFLICT_RETRIES)

    def _reread_after_conflict(self) -> bool:
        """After a 409: re-read the object; True if this replica still leads and may write its record on top.
        A deposed replica writes nothing (its record stays pending: written only if it leads again)."""
        try:
            self._object = self._rest.get(API_VERSION, PLURAL, self.namespace, self.name)
        except ApiException as exc:
            log.warning("%s: cannot re-read after a conflict: %s", self.describe, exc)
            return False
        if self._rest.fence():
            return True
        log.warning("%s was written by another replica and this one no longer holds a fresh Lease: not writing "
                    "its record on top", self.describe)
        return False
