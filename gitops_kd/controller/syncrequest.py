"""SyncRequests: `gitops-kd sync` sets reconcile.gitops-kd.io/requestedAt on the GitOpsKDSource; the leader polls Git.

Like Flux's reconcile.fluxcd.io/requestedAt: the request lives in the cluster (RBAC `patch` on the object is the
authentication), so it reaches whichever replica holds the Lease. The instance reads its GitOpsKDSource (the
`get` it already has) every `interval` seconds; on a new value, if it is the one polling, it polls Git at once
and, once that poll is done and the head it read has been evaluated (status.lastAttemptedRevision), records
the value in status.lastHandledReconcileAt (Flux's field), which `gitops-kd sync` waits for.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from gitops_kd.constants import REQUESTED_AT_ANNOTATION, ROLLOUT_API_VERSION
from gitops_kd.controller.instance import InstanceRecord
from gitops_kd.status.source import PLURAL
from kubeplumb.rest import RestClient

log = logging.getLogger(__name__)

CHECK_INTERVAL = 2.0  # seconds between reads of the GitOpsKDSource's annotation
POLL_WAIT = 120.0  # longest wait for the requested poll to finish
EVALUATE_WAIT = 30.0  # then for the head it read to be evaluated (status.lastAttemptedRevision)


class SyncRequests:
    """Watches one GitOpsKDSource's requestedAt annotation for `controller` (anything with `poller`
    (running, polls) and `trigger_poll()`)."""

    def __init__(self, api_client: Any, record: InstanceRecord, controller: Any, *, interval: float = CHECK_INTERVAL) -> None:
        self._rest = RestClient(api_client)
        self._record, self._controller, self._interval = record, controller, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sync-requests", daemon=True)

    def start(self) -> SyncRequests:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.check()
            except Exception as exc:  # noqa: BLE001 - a failed read is retried at the next interval
                log.warning("%s: reading the sync request failed: %s", self._record.describe, exc)

    def check(self) -> bool:
        """Handle a pending request once; True if one was handled."""
        poller = self._controller.poller
        shards = getattr(self._controller, "shards", None)
        if not poller.running or (shards is not None and not shards.holds(0)):
            return False  # a standby replica, or one not holding shard 0: the leader (shard 0's holder) handles it
        obj = self._rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, self._record.namespace, self._record.name) or {}
        requested = ((obj.get("metadata") or {}).get("annotations") or {}).get(REQUESTED_AT_ANNOTATION)
        if not requested or requested == self._record.record.handled:
            return False
        before = poller.polls
        log.info("%s: sync requested at %s: polling Git now", self._record.describe, requested)
        self._controller.trigger_poll()
        if not poller.wait_for_polls(before + 1, POLL_WAIT):
            return False
        head = poller.last.commit if poller.last is not None else ""
        deadline = time.monotonic() + EVALUATE_WAIT
        while head and self._record.record.attempted != head and time.monotonic() < deadline:
            self._stop.wait(0.05)  # the reconcile that follows the poll evaluates the head (applied or refused)
        self._record.update(handled=requested)
        return True
