"""Which shard a work key belongs to, and how many shards each live replica holds (pure; issue 31)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

from gitops_kd.plan.focus import FLEET, WorkKey


def shard_of(work: WorkKey, shards: int) -> int:
    """A stable hash of the key's namespace/name, modulo ``shards``; the fleet key (the instance record, prune,
    refusals) is shard 0's."""
    if shards <= 1 or work.kind == FLEET:
        return 0
    digest = hashlib.sha256(f"{work.key[0]}/{work.key[1]}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % shards


def fair_share(shards: int, replicas: int) -> int:
    """The most shards one of ``replicas`` live replicas holds: ceil(shards / replicas)."""
    return math.ceil(shards / max(1, replicas))


def preference(identity: str, shards: int) -> list[int]:
    """The order in which ``identity`` tries free shards (rendezvous hashing: replicas prefer different shards, so
    they rarely race for the same one, and a replica that comes back prefers the shards it had)."""
    def score(shard: int) -> bytes:
        return hashlib.sha256(f"{identity}|{shard}".encode()).digest()
    return sorted(range(shards), key=score, reverse=True)


def to_release(held: Sequence[int], share: int, identity: str, shards: int) -> list[int]:
    """The shards to give up when holding more than ``share``: the ones this replica prefers least."""
    if len(held) <= share:
        return []
    order = preference(identity, shards)
    return sorted(held, key=order.index)[share:]
