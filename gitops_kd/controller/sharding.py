"""Sharding's wiring (issue 31): this replica's shard Leases, the keys it owns, the fences and the shard metrics."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes.client import ApiClient

from gitops_kd.controller.options import Options
from gitops_kd.controller.reconcile_fleet import Owns
from gitops_kd.controller.runtime import Manager
from gitops_kd.kube.leader import default_identity
from gitops_kd.kube.shardleases import ShardLeases
from gitops_kd.plan.focus import cluster_key
from gitops_kd.plan.shard import shard_of


def shard_leases(m: Manager, api_client: ApiClient, options: Options) -> Owns:
    """Sharding: this replica's ShardLeases; a key is owned (and acted for) while its shard's Lease is held. The
    fleet key is shard 0's: its holder writes the instance record and runs the fleet's own actions (prune)."""
    lease, count = options.lease, options.shards

    def changed(held: frozenset[int]) -> None:
        if m.metrics is not None:
            m.metrics.set_shards(held, count)
        m.kick()  # the fleet reconcile queues the keys of shards just taken

    m.shards = ShardLeases(
        api_client,
        namespace=options.own_namespace,
        name=lease.name,
        shards=count,
        identity=default_identity(),
        lease_duration=lease.duration,
        renew_deadline=lease.renew_deadline,
        retry_period=lease.retry_period,
        on_change=changed,
    )
    shards: ShardLeases = m.shards

    def owns(work: Any) -> bool:  # plan and start actions for it: held, and not being drained for a handover
        return shards.may_start(shard_of(work, count))

    if m.metrics is not None:
        m.metrics.count_shards(count, ShardCounts(m.collector, count, shards.holds))
    if m.record is not None:  # shard 0's holder writes the record, once its keeper re-checked it (record_keeper.py)
        m.record.quiet = True
        m.record.set_fence(lambda: shards.holds(0) and (m.keeper is None or m.keeper.writes()))
    return owns


class ShardCounts:
    """gitops_kd_shard_clusters: the KDClusters per held shard, from the informers, counted at most once a second."""

    def __init__(self, collector: Any, shards: int, holds: Callable[[int], bool]) -> None:
        self._collector, self._shards, self._holds = collector, shards, holds
        self._at, self._counts = -1.0, [0] * shards

    def __call__(self, shard: int) -> int:
        now = time.monotonic()
        if now - self._at >= 1.0:
            counts = [0] * self._shards
            for key in self._collector.index.cluster_keys():
                counts[shard_of(cluster_key(key), self._shards)] += 1
            self._at, self._counts = now, counts
        return self._counts[shard] if self._holds(shard) else 0


def shard_fences(m: Manager, count: int) -> None:
    """After the actor is wired: each write and exec checks the Lease of the key acted for (held within its renew
    deadline: a draining shard's action in flight still writes), and a draining shard waits for the actor's
    actions in flight for its keys before it is released."""
    shards: ShardLeases = m.shards
    m.executor.set_fence(lambda: shards.holds(shard_of(m.actor.acting_for(), count)))
    shards.busy = lambda shard: any(shard_of(work, count) == shard for work in m.actor.in_flight())
