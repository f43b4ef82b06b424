"""Which shard a work key belongs to, and how many shards each live replica holds (pure; issue 31)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence

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


ACT, HOLD, STAND_BY = "act", "hold", "stand-by"  # count_verdict's answers


def count_verdict(shards: int, members: Iterable[tuple[int | None, bool]], shard_leases: Iterable[int | None]) -> str:
    """What a replica with ``shards`` shards may do, given the other live member Leases (shard count, standing by)
    and the other live shard Leases (shard count) it just listed. A key's shard depends on the count, so replicas
    with different counts must never act at once: STAND_BY when a live member has a higher count (or an unknown
    one); HOLD (keep the shards held, take none) while a replica with another count may still act (its member is
    live and not standing by, or a shard Lease it wrote is live); else ACT."""
    members = list(members)
    if any(count is None or count > shards for count, _ in members):
        return STAND_BY
    if any(count != shards and not standby for count, standby in members):
        return HOLD
    if any(count != shards for count in shard_leases):
        return HOLD
    return ACT
