"""Choosing the action to run now: Waits block their own cluster only; holds act as Waits until due."""

from __future__ import annotations

from gitops_kd.controller.select import select
from gitops_kd.plan.actions import FinishRollout, Plan, RecordStages, SetOnDelete, Wait


def test_wait_blocks_only_its_cluster() -> None:
    a_wait = Wait("pod not ready", 2.0, ("ns", "a"))
    a_next = FinishRollout("ns", "a", "2.0.0")
    b_next = SetOnDelete("ns", "sts-b", "worker", "b")
    chosen = select(Plan((a_wait, a_next, b_next)), {}, 0.0)
    assert chosen.action == b_next and chosen.requeue_after == 2.0


def test_global_wait_blocks_everything() -> None:
    chosen = select(Plan((Wait("wave 0 first", 5.0), SetOnDelete("ns", "s", "r", "b"))), {}, 0.0)
    assert chosen.action is None and chosen.requeue_after == 5.0


def test_held_action_waits_until_its_deadline() -> None:
    act = FinishRollout("ns", "a", "2.0.0")
    assert select(Plan((act,)), {act: 10.0}, 4.0).action is None
    assert select(Plan((act,)), {act: 10.0}, 4.0).requeue_after == 6.0
    assert select(Plan((act,)), {act: 10.0}, 11.0).action == act
    assert select(Plan(()), {}, 0.0).action is None


def test_a_held_stage_record_does_not_hold_its_clusters_work() -> None:
    """Invariant: a RecordStages the API server would not keep (an older CRD prunes status.pods[].stage), held after
    failing, never blocks the cluster's rollout: the next action of the cluster runs (on a real v1.20 API server
    with the field removed from the CRD the rollout never finished before this)."""
    record = RecordStages("ns", "a", (("a-0", "pending"),))
    work = FinishRollout("ns", "a", "2.0.0")
    assert select(Plan((record, work)), {record: 60.0}, 1.0).action == work
    assert select(Plan((record, work)), {}, 1.0).action == record
