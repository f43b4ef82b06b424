"""The pure sharding rules: a key's shard, the fair share, the order replicas try shards, which to give up, and
what a replica may do while replicas with other shard counts are live."""

from __future__ import annotations

from gitops_kd.plan.focus import FLEET_KEY, cluster_key
from gitops_kd.plan.shard import ACT, HOLD, STAND_BY, count_verdict, fair_share, preference, shard_of, to_release


def test_every_key_has_one_stable_shard_and_the_fleet_key_is_shard_0s() -> None:
    keys = [cluster_key(("ns", f"c{i}")) for i in range(400)]
    shards = [shard_of(k, 4) for k in keys]
    assert shards == [shard_of(k, 4) for k in keys]  # stable
    assert set(shards) == {0, 1, 2, 3}
    assert max(shards.count(s) for s in range(4)) < 2 * min(shards.count(s) for s in range(4))  # roughly even
    assert shard_of(FLEET_KEY, 4) == 0
    assert {shard_of(k, 1) for k in keys} == {0}


def test_fair_share_and_release_keep_the_preferred_shards() -> None:
    assert [fair_share(4, r) for r in (0, 1, 2, 3, 4, 5)] == [4, 4, 2, 2, 1, 1]
    order = preference("replica-a", 8)
    assert sorted(order) == list(range(8)) and order != preference("replica-b", 8)
    assert to_release(order[:3], 3, "replica-a", 8) == []
    assert to_release(order[:5], 2, "replica-a", 8) == sorted(order[2:5])


def test_replicas_with_different_shard_counts_never_act_at_once() -> None:
    """Invariant: of two live replicas with different counts, the lower stands by and the higher takes nothing new
    until the lower stands by and no shard Lease of another count is live."""
    assert count_verdict(4, [(4, False)], [4, 4]) == ACT
    assert count_verdict(2, [(4, False)], [4]) == STAND_BY
    assert count_verdict(4, [(None, False)], []) == STAND_BY  # a count it cannot read: the safe side
    assert count_verdict(4, [(2, False)], []) == HOLD  # the lower one may not have seen us yet
    assert count_verdict(4, [(2, True)], [2]) == HOLD  # it stands by, but a shard Lease it wrote is still live
    assert count_verdict(4, [(2, True)], []) == ACT
