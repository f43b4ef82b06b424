"""Shard Leases: every replica holds its fair share of N shards, each under its own Lease (issue 31).

Each replica renews a member Lease `<name>-member-<id>` and, every `retry_period`, reads the instance's Leases
(label gitops-kd.io/instance=<name>): the live members (a Lease whose record changed within its duration, on this
replica's own clock, as client-go's leader election judges a Lease) give the fair share ceil(N / members). It
renews the shard Leases it holds (`<name>-shard-<i>`, label gitops-kd.io/shard=<i>; updates carry the
resourceVersion, so two replicas never both take one), gives up those above its share (it stops acting on them
first), and takes free or expired ones up to its share. `holds(i)` is bounded by time like a leader's: False
`renew_deadline` after the last successful renewal, so a replica that cannot renew stops acting before another
may take the shard. `kubectl get leases -l gitops-kd.io/shard` shows each shard's HOLDER.

Every Lease carries the shard count it was written with (label gitops-kd.io/shards), since a key's shard depends on
it: while replicas run with different `--shards` (a rolling update that changes it), the ones with the lower count
stand by (they release every shard and mark their member Lease gitops-kd.io/standby), and the ones with the higher
count take no new shard while a replica with another count may still act (its member Lease is live and not standing
by, or a shard Lease it wrote is live). A replica judges "higher" from the member Leases it lists right after
renewing its own, so of two replicas with different counts at least one sees the other before it takes a shard.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from gitops_kd.kube.layouts import (
    COUNT_LABEL,
    INSTANCE_LABEL,
    LEADER_LABEL,
    MEMBER_LABEL,
    SHARD_LABEL,
    LeaseClock,
    instance_leases,
)
from gitops_kd.kube.leader import LEASES, micro_time
from gitops_kd.plan.shard import HOLD, STAND_BY, count_verdict, fair_share, preference, to_release
from kubeplumb.rest import RestClient

log = logging.getLogger(__name__)

STANDBY_LABEL = "gitops-kd.io/standby"  # on a member Lease: this replica stands by (a live member has more shards)


def shard_lease(name: str, shard: int) -> str:
    return f"{name}-shard-{shard}"


def member_lease(name: str, identity: str) -> str:
    return f"{name}-member-{hashlib.sha256(identity.encode()).hexdigest()[:10]}"


def holder_of(lease: dict[str, Any] | None) -> str:
    """The holderIdentity of a Lease ("" when free or absent)."""
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def holders(rest: RestClient, namespace: str) -> dict[int, str]:
    """Shard -> the holderIdentity of its Lease in ``namespace`` ("" when free), of every instance there: what
    `kubectl get leases -l gitops-kd.io/shard` shows (``leader.replica_of`` names the replica)."""
    items = rest.list(*LEASES, namespace, label_selector=SHARD_LABEL)["items"]
    return {int(i["metadata"]["labels"][SHARD_LABEL]): holder_of(i) for i in items}


class ShardLeases:
    """This replica's shards of instance ``name`` (``shards`` of them) in ``namespace``. ``on_change(held)`` is
    called (on this object's thread) after the set of held shards changed."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        namespace: str,
        name: str,
        shards: int,
        identity: str,
        lease_duration: float,
        renew_deadline: float,
        retry_period: float,
        on_change: Callable[[frozenset[int]], None] | None = None,
    ) -> None:
        self._rest = RestClient(api_client)
        self.namespace, self.name, self.shards, self.identity = namespace, name, shards, identity
        self.lease_duration, self.renew_deadline, self.retry_period = lease_duration, renew_deadline, retry_period
        self._on_change = on_change
        self.busy: Callable[[int], bool] = lambda _shard: False  # an action for a key of this shard is in flight
        self._draining: set[int] = set()  # held shards being given up: no new action; released once not busy
        self._lock = threading.Lock()
        self._renewed: dict[int, float] = {}  # shard -> monotonic time of its last successful write by us
        self._clock = LeaseClock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.members = 1
        self.standby = False  # a live replica runs with a higher shard count: this one holds nothing

    # -- what the controller asks ------------------------------------------------------------------
    def holds(self, shard: int) -> bool:
        """This replica may act for ``shard``: it holds the Lease and renewed it within renew_deadline."""
        with self._lock:
            renewed = self._renewed.get(shard)
        return renewed is not None and time.monotonic() - renewed < self.renew_deadline

    def may_start(self, shard: int) -> bool:
        """This replica may start an action for ``shard``: it holds it and is not draining it for a handover."""
        with self._lock:
            draining = shard in self._draining
        return not draining and self.holds(shard)

    def held(self) -> frozenset[int]:
        return frozenset(s for s in range(self.shards) if self.holds(s))

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> ShardLeases:
        self.tick()
        self._thread = threading.Thread(target=self._run, name=f"shards {self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release every held shard and the member Lease, so others take them at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.retry_period * 3 + 5)
        for shard in sorted(self._renewed):
            self._release(shard)
        try:
            self._rest.delete(*LEASES, self.namespace, member_lease(self.name, self.identity))
        except Exception as exc:  # noqa: BLE001 - it expires anyway
            log.warning("shards %s: member Lease not deleted: %s", self.name, exc)

    def _run(self) -> None:
        while not self._stop.wait(self.retry_period):
            self.tick()

    # -- one round ---------------------------------------------------------------------------------
    def tick(self) -> None:
        before = self.held()
        try:
            self._round()
        except Exception as exc:  # noqa: BLE001 - the API server is unreachable: held shards time out by themselves
            log.warning("shards %s: %s", self.name, exc)
        after = self.held()
        if after != before:
            log.info(
                "shards %s: %s holds %s of %d (%d live replicas)",
                self.name,
                self.identity,
                sorted(after) or "none",
                self.shards,
                self.members,
            )
            if self._on_change is not None:
                self._on_change(after)

    def _round(self) -> None:
        member = {MEMBER_LABEL: "true", **({STANDBY_LABEL: "true"} if self.standby else {})}
        self._write(member_lease(self.name, self.identity), member)
        leases = instance_leases(self._rest, self.namespace, self.name)
        self._clock.observe(leases)
        with self._lock:
            taken = set(self._renewed)
        # Ours: a Lease naming us that we took ourselves. One that names us without that (edited by hand) is
        # treated as another holder's: taken only once it expired, so its previous holder has stopped by then.
        mine = [
            s
            for s in range(self.shards)
            if s in taken
            and holder_of(leases.get(shard_lease(self.name, s))) == self.identity
            and _count(leases[shard_lease(self.name, s)]) == self.shards
        ]
        for shard in taken - set(mine):  # another replica holds it now (we were too slow, or an edit): stop at once
            with self._lock:
                self._renewed.pop(shard, None)
                self._draining.discard(shard)
        others = [lease for name, lease in leases.items() if self._live(name) and holder_of(lease) != self.identity]
        verdict = count_verdict(
            self.shards,
            [
                (_count(lease), _labels(lease).get(STANDBY_LABEL) == "true")
                for lease in others
                if _labels(lease).get(MEMBER_LABEL)
            ],
            [_count(lease) for lease in others if _labels(lease).get(SHARD_LABEL) or _labels(lease).get(LEADER_LABEL)],
        )
        if verdict == STAND_BY:
            if not self.standby:
                log.warning(
                    "shards %s: a live replica runs with more than %d shards: %s stands by", self.name, self.shards, self.identity
                )
            self.standby = True
            self._drain(mine, leases)
            return
        self.standby = False
        self.members = max(
            1,
            1
            + sum(
                1
                for lease in others
                if _labels(lease).get(MEMBER_LABEL) and _count(lease) == self.shards and not _labels(lease).get(STANDBY_LABEL)
            ),
        )
        share = fair_share(self.shards, self.members)
        with self._lock:
            keeping = [s for s in mine if s not in self._draining]
        self._drain(to_release(keeping, share, self.identity, self.shards), leases)
        with self._lock:
            keeping = [s for s in mine if s in self._renewed and s not in self._draining]
        for shard in keeping:
            self._take(shard, leases.get(shard_lease(self.name, shard)))
        if verdict == HOLD:  # a replica with another shard count may still act: take nothing new
            return
        for shard in preference(self.identity, self.shards):
            if len([s for s in keeping if self.holds(s)]) >= share:
                break
            lease = leases.get(shard_lease(self.name, shard))
            if shard in taken or shard in keeping:
                continue  # ours, being drained, or just lost: not taken again in this round
            if lease is None or not holder_of(lease) or not self._live(lease["metadata"]["name"]):
                if self._take(shard, lease):
                    keeping.append(shard)

    def _drain(self, shards: list[int], leases: dict[str, dict[str, Any]]) -> None:
        """Give ``shards`` up without a gap or an overlap: start no new action for them at once, keep renewing them
        while an action for one of their keys is in flight, and release each once none is (the next holder waits
        for the release, or for the Lease to expire)."""
        with self._lock:
            self._draining.update(s for s in shards if s in self._renewed)
            draining = sorted(self._draining)
        for shard in draining:
            if self.busy(shard):
                log.info("shards %s: %s drains shard %d: waiting for its action in flight", self.name, self.identity, shard)
                self._take(shard, leases.get(shard_lease(self.name, shard)))
            else:
                self._release(shard)

    def _live(self, name: str) -> bool:
        return self._clock.live(name)

    def _take(self, shard: int, lease: dict[str, Any] | None) -> bool:
        """Take or renew ``shard``'s Lease (guarded by its resourceVersion); True when it is ours now."""
        name = shard_lease(self.name, shard)
        try:
            self._write(name, {SHARD_LABEL: str(shard)}, lease)
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise
            with self._lock:
                self._renewed.pop(shard, None)
                self._draining.discard(shard)
            return False
        with self._lock:
            self._renewed[shard] = time.monotonic()
        return True

    def _release(self, shard: int) -> None:
        """Stop acting for ``shard`` first, then empty the Lease's holder (leaseDurationSeconds 1) for others."""
        with self._lock:
            self._renewed.pop(shard, None)
            self._draining.discard(shard)
        name = shard_lease(self.name, shard)
        try:
            lease = self._rest.get_or_none(*LEASES, self.namespace, name)
            if lease is not None and holder_of(lease) == self.identity:
                lease["spec"] = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1}
                self._rest.replace(*LEASES, self.namespace, name, lease)
                log.info("shards %s: %s released shard %d", self.name, self.identity, shard)
        except Exception as exc:  # noqa: BLE001 - it expires after its duration
            log.warning("shards %s: shard %d not released: %s", self.name, shard, exc)

    def _write(self, name: str, labels: dict[str, str], lease: dict[str, Any] | None = None) -> None:
        """Create the Lease ``name`` held by this replica, or update it (read first unless ``lease`` is given); its
        labels become the instance's, this replica's shard count and ``labels``."""
        stamp = micro_time(datetime.now(UTC))
        duration = max(1, math.ceil(self.lease_duration))
        labels = {INSTANCE_LABEL: self.name, COUNT_LABEL: str(self.shards), **labels}
        current = lease if lease is not None else self._rest.get_or_none(*LEASES, self.namespace, name)
        if current is None:
            self._rest.create(
                *LEASES,
                self.namespace,
                {
                    "apiVersion": LEASES[0],
                    "kind": "Lease",
                    "metadata": {"name": name, "namespace": self.namespace, "labels": labels},
                    "spec": {
                        "holderIdentity": self.identity,
                        "leaseDurationSeconds": duration,
                        "acquireTime": stamp,
                        "renewTime": stamp,
                        "leaseTransitions": 0,
                    },
                },
            )
            return
        spec = dict(current.get("spec") or {})
        taken = spec.get("holderIdentity") != self.identity
        spec.update(holderIdentity=self.identity, leaseDurationSeconds=duration, renewTime=stamp)
        if taken:
            spec.update(acquireTime=stamp, leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1)
        kept = {k: v for k, v in _labels(current).items() if k != STANDBY_LABEL}
        metadata = {**current["metadata"], "labels": {**kept, **labels}}
        self._rest.replace(
            *LEASES, self.namespace, name, {**current, "metadata": metadata, "spec": spec}
        )  # carries resourceVersion


def _labels(lease: dict[str, Any]) -> dict[str, str]:
    return dict(lease["metadata"].get("labels") or {})


def _count(lease: dict[str, Any]) -> int | None:
    """The shard count a Lease was written with (None: unknown)."""
    value = _labels(lease).get(COUNT_LABEL, "")
    return int(value) if value.isdigit() else None
