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

from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.execute.events import EventRecorder
from gitops_kd.execute.fence import Fence, FencedRest, NotLeading
from gitops_kd.redact import redact
from gitops_kd.status.events import RECORD_RECREATED, RECORD_REWRITTEN
from gitops_kd.status.source import KIND, PLURAL, SourceRecord, source_status
from kubeplumb.names import NORMAL, WARNING

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
    of it). A failed write leaves the record `pending`: controller/record_keeper.py retries it (flush) with
    backoff and holds every plan until it landed. refresh() re-reads the object: one deleted is created again,
    one whose status was edited out of band is written back (RecordRewritten Event). Thread-safe.

    Fenced like the executor (execute/fence.py): every write, the record's Events included, first checks
    ``fence()`` (set_fence; leader election: a Lease renewed within the renew deadline). A deposed or thawed
    replica writes nothing: after a 409 it re-reads and stops, never putting its view on top.
    """

    def __init__(
        self, api_client: ApiClient, *, namespace: str, name: str, url: str, branch: str, now: Callable[[], datetime] = _utcnow
    ) -> None:
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
        self.pending = False  # the last write of the record failed: what the cluster holds is not what we know
        self.quiet = False  # sharding: most replicas do not write the record; a fenced write is not worth a warning
        self.listeners: list[Callable[[SourceRecord, SourceRecord], None]] = []  # (before, after) of each change

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
            obj = self._rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, self.namespace, self.name)
            self._object = obj = obj if obj is not None else self._create()
            found = SourceRecord.from_status(obj.get("status"))
            if not found.url and not found.applied:
                self.recorded = None
            elif (redact(found.url), found.branch) != (redact(self._url), self._branch):  # the status holds it redacted
                log.warning(
                    "%s records %s@%s, this instance follows %s@%s: not adopting its commits",
                    self.describe,
                    found.url,
                    found.branch,
                    self._url,
                    self._branch,
                )
                self.recorded = None
            else:
                self.recorded = found
                self._record = found
            self._flush()
            return self.recorded

    def recorded_in_cluster(self) -> str:
        """The applied commit the object in the cluster records now (one read; nothing adopted or written)."""
        obj = self._rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, self.namespace, self.name)
        return SourceRecord.from_status((obj or {}).get("status")).applied

    def _create(self) -> dict[str, Any]:
        body = {
            "apiVersion": ROLLOUT_API_VERSION,
            "kind": KIND,
            "metadata": {"name": self.name, "namespace": self.namespace, "labels": {"app.kubernetes.io/part-of": "gitops-kd"}},
            "spec": {},
        }
        try:
            obj = self._rest.create(ROLLOUT_API_VERSION, PLURAL, self.namespace, body)
        except ApiException as exc:
            if exc.status != 409:
                raise
            return self._rest.get(ROLLOUT_API_VERSION, PLURAL, self.namespace, self.name)
        log.info("%s: created", self.describe)
        return obj

    def refresh(self) -> bool:
        """Re-read the object and write what this replica knows if it differs: a deleted object is created
        again, a status edited out of band is written back. True when the cluster holds the record afterwards.
        Raises ApiException (or a transport error) if the read or the create fails."""
        with self._lock:
            obj = self._rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, self.namespace, self.name)
            if obj is None:
                if not self._rest.fence():
                    return False
                log.warning("%s was deleted: creating it again with the record this replica holds", self.describe)
                obj = self._create()
                self.event(
                    RECORD_RECREATED,
                    "deleted out of band: created again with the applied commit "
                    f"{self._record.applied[:12] or '-'} and force-push baseline {self._record.baseline[:12] or '-'}",
                    type_=WARNING,
                )
            elif (
                self._object is not None
                and not self.pending
                and obj.get("status") != self._object.get("status")
                and self._rest.fence()
            ):
                log.warning(
                    "%s was edited out of band (lastAppliedRevision %s, forcePushBaseline %s): writing back "
                    "what this replica applied",
                    self.describe,
                    (obj.get("status") or {}).get("lastAppliedRevision"),
                    (obj.get("status") or {}).get("forcePushBaseline"),
                )
                self.event(
                    RECORD_REWRITTEN,
                    "status edited out of band; written back: applied commit "
                    f"{self._record.applied[:12] or '-'}, force-push baseline {self._record.baseline[:12] or '-'}",
                    type_=WARNING,
                )
            self._object = obj
            self._flush()
            return not self.pending

    def update(self, **changes: Any) -> bool:
        """Apply one transition; True if the record changed (and a write was attempted)."""
        with self._lock:
            new = self._record.with_changes(**changes)
            if new == self._record:
                return False
            before, self._record = self._record, new
            self._flush()
        for listener in self.listeners:
            try:
                listener(before, new)
            except Exception:  # noqa: BLE001 - a listener (the alerts edge) never breaks a transition
                log.exception("instance record listener failed")
        return True

    def flush(self) -> None:
        """Write the record if the last write failed."""
        with self._lock:
            self._flush()

    def event(self, reason: str, message: str, *, type_: str = NORMAL) -> None:
        """An Event about the instance object (best effort)."""
        obj = self._object or {"metadata": {"namespace": self.namespace, "name": self.name}}
        self.events.record({**obj, "apiVersion": ROLLOUT_API_VERSION, "kind": KIND}, reason, message, type_=type_)

    def _flush(self) -> None:
        if self._object is None:
            return
        current = self._object.get("status") or {}
        generation = self._object.get("metadata", {}).get("generation") or 1
        status = source_status(
            self._record, current, generation=generation, not_ready_after=NOT_READY_AFTER_FAILED_POLLS, now=self._now()
        )
        if status == current:
            self.pending = False
            return
        self.pending = True  # until a write lands
        for _ in range(CONFLICT_RETRIES):
            body = copy.deepcopy(self._object)
            body["status"] = status
            try:
                self._object = self._rest.replace(
                    ROLLOUT_API_VERSION, PLURAL, self.namespace, self.name, body, subresource="status"
                )
                self.writes += 1
                self.pending = False
                return
            except NotLeading as exc:
                if not self.quiet:
                    log.warning("%s", exc)
                return
            except ApiException as exc:
                if exc.status == 409:  # someone wrote since our read: the leader writes on top, a deposed one stops
                    if not self._reread_after_conflict():
                        return
                    continue
                if exc.status == 404 and self._rest.fence():  # deleted: create it again, then write on it
                    log.warning("%s was deleted: creating it again", self.describe)
                    try:
                        self._object = self._create()
                    except Exception as again:  # noqa: BLE001 - retried by the record keeper
                        log.warning("%s: cannot create it again (%s); retrying", self.describe, again)
                        return
                    continue
                log.warning(
                    "%s: status write failed (%s); retrying with backoff, nothing is planned until it lands",
                    self.describe,
                    exc.reason,
                )
                return
            except Exception as exc:  # noqa: BLE001 - the API unreachable: keep the record, retry later
                log.warning(
                    "%s: status write failed (%s); retrying with backoff, nothing is planned until it lands", self.describe, exc
                )
                return
        log.warning("%s: status write conflicted %d times; retrying with backoff", self.describe, CONFLICT_RETRIES)

    def _reread_after_conflict(self) -> bool:
        """After a 409: re-read the object; True if this replica still leads and may write its record on top.
        A deposed replica writes nothing (its record stays pending: written only if it leads again)."""
        try:
            self._object = self._rest.get(ROLLOUT_API_VERSION, PLURAL, self.namespace, self.name)
        except ApiException as exc:
            log.warning("%s: cannot re-read after a conflict: %s", self.describe, exc)
            return False
        if self._rest.fence():
            return True
        log.warning(
            "%s was written by another replica and this one no longer holds a fresh Lease: not writing its record on top",
            self.describe,
        )
        return False
