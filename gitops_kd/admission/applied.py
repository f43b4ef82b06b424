"""AppliedRevision: the desired state every replica judges against, the revision the cluster records as applied.

The instance's GitOpsKDSource (named after the Lease) records status.lastAppliedRevision; the leader writes it
when it starts applying a commit. Each replica, leader or standby, watches that one object (a watch narrowed by
fieldSelector metadata.name, so RBAC's resourceNames apply) and builds the desired state of exactly that
revision from its own Git cache (fetching it, read-only, when the cache does not have it), so an admission
answer does not depend on which replica the API server reaches. The leader's in-memory desired state is used
when it is that revision. Loading runs on a thread of its own, never inside a review; a failed load is retried
with backoff. While a replica cannot judge (the record not read yet, the revision not loaded, the record of
another repository or branch), `current()` says why.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from kubernetes.client import ApiClient

from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.source import DesiredState, GitSource
from gitops_kd.source.errors import SourceError
from gitops_kd.status.source import KIND, PLURAL, SHORT_SHA, SourceRecord
from kubeplumb.informer import Informer

log = logging.getLogger(__name__)
RETRY_SECONDS, RETRY_MAX_SECONDS = 1.0, 30.0


@dataclass(frozen=True)
class Applied:
    """What a replica judges against: the recorded ``revision`` ("" when none is applied) and its ``desired``
    state; ``unknown`` (desired None) says why no verdict can be given."""

    revision: str = ""
    desired: DesiredState | None = None
    unknown: str = ""


class AppliedRevision:
    """The desired state of the revision GitOpsKDSource ``namespace/name`` records as applied (see the module)."""

    def __init__(
        self,
        api_client: ApiClient,
        source: GitSource,
        *,
        namespace: str,
        name: str,
        local: Callable[[str], DesiredState | None] = lambda _sha: None,
    ) -> None:
        self.source, self.namespace, self.name, self._local = source, namespace, name, local
        self.describe = f"{KIND} {namespace}/{name}"
        self._informer = Informer(
            api_client, ROLLOUT_API_VERSION, PLURAL, namespace=namespace, field_selector=f"metadata.name={name}"
        )
        self._wake, self._stop = threading.Event(), threading.Event()
        self._informer.add_handler(lambda _event, _obj, _old: self._wake.set())
        self._loaded: tuple[str, DesiredState] | None = None
        self._failed: tuple[str, str] | None = None  # (revision, why it could not be loaded)
        self._thread: threading.Thread | None = None

    def start(self) -> AppliedRevision:
        self._informer.start()
        self._thread = threading.Thread(target=self._run, name="gitops-kd-admission-revision", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._informer.stop()
        if self._thread is not None:
            self._thread.join(5)

    def current(self) -> Applied:
        """The revision to judge against and its desired state, or why there is none (quick: no I/O)."""
        if not self._informer.synced:
            return Applied(unknown=f"{self.describe} is not read yet")
        wanted, mismatch = self._wanted()
        if mismatch:
            return Applied(wanted, None, mismatch)
        if not wanted:
            return Applied()
        loaded = self._loaded
        if loaded is not None and loaded[0] == wanted:
            return Applied(wanted, loaded[1])
        local = self._local(wanted)
        if local is not None:
            return Applied(wanted, local)
        failed = self._failed
        why = failed[1] if failed is not None and failed[0] == wanted else "fetching it from Git"
        return Applied(wanted, None, f"the applied revision {wanted[:SHORT_SHA]} ({self.describe}) is not loaded yet: {why}")

    def _wanted(self) -> tuple[str, str]:
        """(the recorded applied revision, why it cannot be used: "" when it can)."""
        obj = self._informer.get(self.namespace, self.name)
        record = SourceRecord.from_status((obj or {}).get("status"))
        if record.applied and (record.url, record.branch) != (self.source.url, self.source.branch):
            return record.applied, (
                f"{self.describe} records {record.url}@{record.branch}; this replica follows "
                f"{self.source.url}@{self.source.branch}"
            )
        return record.applied, ""

    def _run(self) -> None:
        delay = RETRY_SECONDS
        while not self._stop.is_set():
            self._wake.clear()
            wanted, mismatch = self._wanted() if self._informer.synced else ("", "")
            timeout: float | None = None
            if wanted and not mismatch and (self._loaded is None or self._loaded[0] != wanted):
                if self._load(wanted):
                    delay = RETRY_SECONDS
                else:
                    timeout, delay = delay, min(delay * 2, RETRY_MAX_SECONDS)
            self._wake.wait(timeout)

    def _load(self, revision: str) -> bool:
        try:
            desired = self._local(revision) or self._read(revision)
        except Exception as exc:  # noqa: BLE001 - Git unreachable, commit unknown: retried with backoff
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self._failed = (revision, why)
            log.warning("admission: cannot load the applied revision %s: %s; retrying", revision[:SHORT_SHA], why)
            return False
        self._loaded, self._failed = (revision, desired), None
        log.info("admission: judging from revision %s (%s)", revision[:SHORT_SHA], self.describe)
        return True

    def _read(self, revision: str) -> DesiredState:
        """The revision's desired state from the Git cache; a commit no fetched branch reaches is fetched by sha."""
        try:
            return self.source.desired_at(revision)
        except SourceError as exc:
            if "unknown revision" not in exc.message:
                raise
        self.source.fetch_commit(revision)
        return self.source.desired_at(revision)
