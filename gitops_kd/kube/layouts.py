"""Which of an instance's Leases are live, judged on this replica's own clock, and whether another layout acts.

A Lease is live while its holderIdentity is set and its spec changed within its leaseDurationSeconds, as measured
on the reader's monotonic clock since it last saw the spec change (client-go's rule; a Lease first seen counts as
just changed). The unsharded leader (`--shards 1`) and sharded replicas both read their instance's Leases (label
gitops-kd.io/instance) through this, so each sees the other's layout (docs/design/sharding.md, "One fence").
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kubernetes.client.exceptions import ApiException

from gitops_kd.kube.leader import LEASES
from kubeplumb.rest import RestClient

log = logging.getLogger(__name__)

INSTANCE_LABEL = "gitops-kd.io/instance"
SHARD_LABEL = "gitops-kd.io/shard"
MEMBER_LABEL = "gitops-kd.io/member"
COUNT_LABEL = "gitops-kd.io/shards"  # the shard count (layout) the Lease was written with
LEADER_LABEL = "gitops-kd.io/leader"  # on the leader-election Lease of a `--shards 1` replica (layout 1, every key)


class LeaseClock:
    """When each Lease's spec last changed, on this replica's clock."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[dict[str, Any], float]] = {}  # lease name -> (spec, monotonic when it changed)

    def observe(self, leases: dict[str, dict[str, Any]]) -> None:
        now = time.monotonic()
        for name, lease in leases.items():
            spec = dict(lease.get("spec") or {})
            if self._seen.get(name, ({}, 0.0))[0] != spec:
                self._seen[name] = (spec, now)

    def live(self, name: str) -> bool:
        spec, changed = self._seen.get(name, ({}, 0.0))
        duration = float(spec.get("leaseDurationSeconds") or 0)
        return bool(spec.get("holderIdentity")) and time.monotonic() - changed < duration


def instance_leases(rest: RestClient, namespace: str, name: str) -> dict[str, dict[str, Any]]:
    """Lease name -> Lease, of every Lease of instance ``name`` in ``namespace`` (leader, shards, members)."""
    items = rest.list(*LEASES, namespace, label_selector=f"{INSTANCE_LABEL}={name}")["items"]
    return {item["metadata"]["name"]: item for item in items}


class ShardedWatch:
    """For the unsharded leader: is a sharded replica of this instance live (a live member Lease or a live shard
    Lease)? Then the leader does not lead: it yields (drains, then releases) and candidates do not take the Lease."""

    def __init__(self, rest: RestClient, namespace: str, name: str) -> None:
        self._rest, self._namespace, self._name = rest, namespace, name
        self._clock = LeaseClock()
        self._forbidden = False

    def sharded_live(self) -> str:
        """The first live sharded Lease's name ("" when none): listed now, after this replica's own last write. A
        Role that may not list Leases (an RBAC from before this rule) cannot run sharded replicas either: none."""
        try:
            leases = instance_leases(self._rest, self._namespace, self._name)
        except ApiException as exc:
            if exc.status != 403:
                raise
            if not self._forbidden:
                log.warning("leases in %s cannot be listed (403): no sharded replica is looked for", self._namespace)
            self._forbidden = True
            return ""
        self._clock.observe(leases)
        for name, lease in sorted(leases.items()):
            labels = (lease.get("metadata") or {}).get("labels") or {}
            if (labels.get(MEMBER_LABEL) or labels.get(SHARD_LABEL)) and self._clock.live(name):
                return name
        return ""
