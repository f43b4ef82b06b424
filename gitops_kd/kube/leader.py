"""Leader election on a coordination.k8s.io/v1 Lease, following client-go's leaderelection package.

Semantics (as client-go's LeaderElector with a LeaseLock):

- a candidate retries `try_acquire_or_renew` every `retry_period` (+ up to 1.2x jitter); it takes the
  Lease when it does not exist, has no holder, or its record has not changed for `leaseDurationSeconds`
  as measured on the candidate's own monotonic clock since it last saw the record change (no trust in
  other machines' clocks);
- the leader renews every `retry_period`; updates carry the Lease's resourceVersion, so a concurrent
  writer makes the update fail with 409 and the leader re-reads (client-go's "slow path");
- the leader stops leading when no renewal succeeded for `renew_deadline` (client-go), and at once when
  it reads the Lease held by someone else (stricter than client-go, which waits for the deadline);
- on a graceful stop it releases the Lease (client-go's ReleaseOnCancel): empty holderIdentity and
  leaseDurationSeconds 1, so a waiting candidate takes over on its next retry.

Differences, on purpose: after losing the lease the elector goes back to being a candidate instead of
returning (so one process can lead again later); on_stopped_leading is only called after
on_started_leading (client-go calls it even if it never led); `is_leader` is also bounded by time, so
it turns False `renew_deadline` after the last successful renewal even if the elector thread is stuck.
Callbacks run on the elector's thread and must return promptly.

Yielding (``may_lead``, docs/design/sharding.md "One fence"): a candidate takes the Lease only while ``may_lead()``
says so, asked before trying and again right after its write took the Lease (so of two replicas that each write
their own Lease and then list the other's, at least one sees the other); a leader asks it after every renewal, and
when it turns False the leader yields: ``on_yield`` runs on its own thread (it stops the controller: a running action
finishes) while the leader keeps renewing, then the leader steps down and releases the Lease.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from gitops_kd.constants import LEASE_DURATION, LEASE_RENEW_DEADLINE, LEASE_RETRY_PERIOD
from kubeplumb.rest import RestClient

log = logging.getLogger(__name__)

LEASES = ("coordination.k8s.io/v1", "leases")
JITTER_FACTOR = 1.2
_MICROTIME = "%Y-%m-%dT%H:%M:%S.%fZ"


def default_identity() -> str:
    """A unique candidate identity: hostname plus a random suffix, as client-go examples use."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4()}"


def replica_of(identity: str) -> str:
    """The replica (pod or host name) of a ``default_identity`` (the identity itself when it has no suffix)."""
    return identity.split("_", 1)[0]


def micro_time(when: datetime) -> str:
    """metav1.MicroTime text: RFC 3339 in UTC with microseconds."""
    return when.astimezone(UTC).strftime(_MICROTIME)


@dataclass(frozen=True)
class LeaderElectionRecord:
    """client-go's LeaderElectionRecord, as stored in a Lease's spec."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    leader_transitions: int = 0

    def to_spec(self) -> dict[str, Any]:
        """The Lease spec for this record (LeaderElectionRecordToLeaseSpec)."""
        spec = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.leader_transitions,
        }
        return {key: value for key, value in spec.items() if value is not None}

    @classmethod
    def from_spec(cls, spec: dict[str, Any] | None) -> LeaderElectionRecord:
        """The record in a Lease spec (LeaseSpecToLeaderElectionRecord); missing fields are zero."""
        spec = spec or {}
        return cls(
            str(spec.get("holderIdentity") or ""),
            int(spec.get("leaseDurationSeconds") or 0),
            spec.get("acquireTime"),
            spec.get("renewTime"),
            int(spec.get("leaseTransitions") or 0),
        )


Callback = Callable[[], None]


class LeaderElector:
    """Campaigns for the Lease `namespace/name` as `identity`; see the module docstring for semantics."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = LEASE_DURATION,
        renew_deadline: float = LEASE_RENEW_DEADLINE,
        retry_period: float = LEASE_RETRY_PERIOD,
        on_started_leading: Callback,
        on_stopped_leading: Callback,
        on_new_leader: Callable[[str], None] | None = None,
        release_on_cancel: bool = True,
        labels: dict[str, str] | None = None,
        may_lead: Callable[[], bool] | None = None,
        on_yield: Callback | None = None,
    ) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        if min(lease_duration, renew_deadline, retry_period) <= 0:
            raise ValueError("leaseDuration, renewDeadline and retryPeriod must be greater than zero")
        if on_started_leading is None or on_stopped_leading is None:
            raise ValueError("OnStartedLeading and OnStoppedLeading callbacks must not be nil")
        if not identity:
            raise ValueError("Lock identity is empty")
        if not namespace or not name:
            raise ValueError("Lease namespace and name must not be empty")
        self.namespace, self.name, self.identity = namespace, name, identity
        self.lease_duration, self.renew_deadline, self.retry_period = lease_duration, renew_deadline, retry_period
        self.release_on_cancel = release_on_cancel
        self.labels = dict(labels or {})
        self._may_lead, self._on_yield = may_lead, on_yield
        self.yielded = False  # stepped down because may_lead() turned False
        self._rest = RestClient(api_client, timeout=renew_deadline)
        self._on_started, self._on_stopped, self._on_new_leader = on_started_leading, on_stopped_leading, on_new_leader
        self._observed = LeaderElectionRecord()
        self._observed_raw: dict[str, Any] | None = None
        self._observed_time = 0.0
        self._lease: dict[str, Any] | None = None
        self._reported_leader = ""
        self._leading = False
        self._renewed_at = 0.0
        self._stop = threading.Event()
        self._release_on_stop = release_on_cancel
        self._thread: threading.Thread | None = None

    # -- public ------------------------------------------------------------------------------------
    @property
    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_leader(self) -> bool:
        """True while leading and less than renew_deadline has passed since the last successful renewal."""
        return self._leading and time.monotonic() < self._renewed_at + self.renew_deadline

    @property
    def leader(self) -> str:
        """The holder identity last observed on the Lease ("" when none)."""
        return self._observed.holder_identity

    def run(self) -> None:
        """Campaign and lead until stop(): blocking. Leadership lost → on_stopped_leading, then campaign again."""
        log.info("leader election %s: %s is a candidate", self.describe, self.identity)
        while not self._stop.is_set():
            if not self._acquire():
                break
            self._lead()
        log.info("leader election %s: %s stopped", self.describe, self.identity)

    def start(self) -> threading.Thread:
        """Run in a daemon thread; returns it."""
        if self._thread is not None and self._thread.is_alive():
            raise RuntimeError(f"leader elector {self.identity} already started")
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name=f"leader-elector-{self.name}", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, *, release: bool | None = None, timeout: float | None = None) -> None:
        """Stop campaigning: a leader calls on_stopped_leading and then (release, default
        release_on_cancel) gives up the Lease. Waits for the thread started by start()."""
        self._release_on_stop = self.release_on_cancel if release is None else release
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout if timeout is not None else self.renew_deadline * 2 + 5)

    # -- loops ---------------------------------------------------------------------------------------
    def _acquire(self) -> bool:
        log.info("attempting to acquire leader lease %s...", self.describe)
        while True:
            started = time.monotonic()
            succeeded = self._allowed() and self._try_acquire_or_renew()
            self._maybe_report_transition()
            if succeeded and not self._allowed():  # asked again after our write: another layout acts
                self._release()
                succeeded = False
            if succeeded and self._stop.is_set():  # stopped while acquiring: do not start leading
                if self._release_on_stop:
                    self._release()
                return False
            if succeeded:
                log.info("successfully acquired lease %s", self.describe)
                self._renewed_at = started
                return True
            if self._stop.wait(self.retry_period + random.uniform(0, JITTER_FACTOR * self.retry_period)):
                return False

    def _lead(self) -> None:
        self._leading = True
        try:
            self._on_started()
        except Exception:  # a runtime that cannot start must not keep the lease
            log.exception("leader election %s: on_started_leading failed; stepping down", self.describe)
            self._step_down(release=True)
            self._stop.wait(self.retry_period)
            return
        lost = ""
        while not lost and not self._stop.wait(self.retry_period):
            lost = self._renew()
            if not lost and not self._allowed():
                lost = self._yield()
        self._step_down(release=(self._stop.is_set() and self._release_on_stop) or self.yielded)
        if lost:
            log.info("failed to renew lease %s: %s", self.describe, lost)

    def _allowed(self) -> bool:
        """``may_lead()`` (True without one; False when it cannot tell: the API server is unreachable)."""
        if self._may_lead is None:
            return True
        try:
            return self._may_lead()
        except Exception as exc:  # noqa: BLE001 - unknown: do not start leading, and a leader keeps its deadline
            log.warning("leader election %s: cannot tell whether another layout acts: %s", self.describe, exc)
            return self._leading

    def _yield(self) -> str:
        """Another layout acts: drain (``on_yield`` on its own thread) while renewing, then step down ("" if a
        renewal failed meanwhile: the Lease was lost, not yielded)."""
        log.warning("leader election %s: a replica with another shard layout is live: %s yields", self.describe, self.identity)
        self.yielded = True
        drain = threading.Thread(target=self._on_yield or (lambda: None), name="leader-yield", daemon=True)
        drain.start()
        while drain.is_alive():
            drain.join(self.retry_period)
            if drain.is_alive():
                lost = self._renew()
                if lost:
                    self.yielded = False
                    return lost
        return "yielded to another shard layout"

    def _renew(self) -> str:
        """Renew, retrying every retry_period until renew_deadline; "" on success, else why it was lost."""
        while True:
            started = time.monotonic()
            if self._try_acquire_or_renew():
                self._renewed_at = started
                self._maybe_report_transition()
                return ""
            self._maybe_report_transition()
            holder = self._observed.holder_identity
            if holder and holder != self.identity:
                return f"the lease is held by {holder}"
            remaining = self._renewed_at + self.renew_deadline - time.monotonic()
            if remaining <= 0:
                return "timed out waiting for the condition"
            if self._stop.wait(min(self.retry_period, remaining)):
                return ""

    def _step_down(self, *, release: bool) -> None:
        self._leading = False
        try:
            self._on_stopped()
        except Exception:
            log.exception("leader election %s: on_stopped_leading failed", self.describe)
        if release:
            self._release()

    # -- one attempt (tryAcquireOrRenew) ----------------------------------------------------------------
    def _own_record_is_leader(self) -> bool:
        return self._observed.holder_identity == self.identity

    def _lease_valid(self, now: float) -> bool:
        return self._observed_time + self._observed.lease_duration_seconds > now

    def _set_observed(self, record: LeaderElectionRecord, raw: dict[str, Any] | None = None) -> None:
        self._observed = record
        self._observed_raw = raw if raw is not None else record.to_spec()
        self._observed_time = time.monotonic()

    def _try_acquire_or_renew(self) -> bool:
        stamp = micro_time(datetime.now(UTC))
        record = LeaderElectionRecord(self.identity, max(1, math.ceil(self.lease_duration)), stamp, stamp, 0)
        try:
            if self._own_record_is_leader() and self._lease_valid(time.monotonic()):
                fast = _with(record, self._observed.acquire_time, self._observed.leader_transitions)
                try:
                    self._update(fast)
                    self._set_observed(fast)
                    return True
                except ApiException as exc:
                    log.warning("Failed to update lock optimistically: %s, falling back to slow path", _why(exc))
            lease = self._rest.get_or_none(*LEASES, self.namespace, self.name)
            if lease is None:
                self._lease = self._rest.create(
                    *LEASES,
                    self.namespace,
                    {
                        "apiVersion": LEASES[0],
                        "kind": "Lease",
                        "metadata": {
                            "name": self.name,
                            "namespace": self.namespace,
                            **({"labels": self.labels} if self.labels else {}),
                        },
                        "spec": record.to_spec(),
                    },
                )
                self._set_observed(record)
                return True
            self._lease = lease
            raw = dict(lease.get("spec") or {})
            if raw != self._observed_raw:
                self._set_observed(LeaderElectionRecord.from_spec(raw), raw)
            old = self._observed
            if old.holder_identity and self._lease_valid(time.monotonic()) and not self._own_record_is_leader():
                log.debug("lock is held by %s and has not yet expired", old.holder_identity)
                return False
            if self._own_record_is_leader():
                record = _with(record, old.acquire_time, old.leader_transitions)
            else:
                record = _with(record, stamp, old.leader_transitions + 1)
            self._update(record)
            self._set_observed(record)
            return True
        except ApiException as exc:
            log.warning("leader election %s: %s", self.describe, _why(exc))
        except Exception as exc:  # transport errors: the API server is unreachable
            log.warning("leader election %s: error retrieving resource lock: %s", self.describe, exc)
        return False

    def _update(self, record: LeaderElectionRecord) -> None:
        if self._lease is None:
            raise RuntimeError("lease not initialized, call get or create first")
        body = dict(self._lease)
        body["spec"] = record.to_spec()
        if self.labels:
            metadata = dict(body.get("metadata") or {})
            body["metadata"] = {**metadata, "labels": {**(metadata.get("labels") or {}), **self.labels}}
        self._lease = self._rest.replace(*LEASES, self.namespace, self.name, body)

    def _release(self) -> bool:
        if not self._own_record_is_leader():
            return True
        stamp = micro_time(datetime.now(UTC))
        record = LeaderElectionRecord("", 1, stamp, stamp, self._observed.leader_transitions)
        try:
            self._update(record)
        except Exception as exc:
            log.error("Failed to release lock %s: %s", self.describe, _why(exc))
            return False
        self._set_observed(record)
        log.info("leader election %s: %s released the lease", self.describe, self.identity)
        return True

    def _maybe_report_transition(self) -> None:
        holder = self._observed.holder_identity
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        if holder and self._on_new_leader is not None:
            try:
                self._on_new_leader(holder)
            except Exception:
                log.exception("leader election %s: on_new_leader failed", self.describe)


def _with(record: LeaderElectionRecord, acquire_time: str | None, transitions: int) -> LeaderElectionRecord:
    return LeaderElectionRecord(
        record.holder_identity, record.lease_duration_seconds, acquire_time, record.renew_time, transitions
    )


def _why(exc: BaseException) -> str:
    if isinstance(exc, ApiException):
        try:
            return str(json.loads(exc.body or "{}").get("message") or exc.reason)
        except ValueError:
            return f"{exc.status} {exc.reason}"
    return str(exc)
