"""The stage the planner records for each pod (RecordStages -> KDRollout status.pods[pod].stage), through a
whole rollout run on the model of the cluster (tests/plan/kdworld.py)."""

from __future__ import annotations

from gitops_kd.plan import actions as A
from gitops_kd.plan import plan
from gitops_kd.rollout.model import Stage
from plan.kdworld import HELLO1, HELLO2, HELLO_DEV, NS, FakeCluster, desired, live_cluster, observed

KEY = (NS, "hello-dev")
PODS = ("kdss-controller-0", "kdss-worker-1", "kdss-worker-0")


def _run(world: FakeCluster, want, limit: int = 400) -> tuple[dict[str, list[str]], list[A.Action]]:
    """Execute the plan's next action until steady; each pod's recorded stages in order (repeats folded)."""
    seen: dict[str, list[str]] = {pod: [] for pod in PODS}
    done: list[A.Action] = []
    for _ in range(limit):
        action = plan(want, world.state, now=world.now).next()
        if action is None:
            return seen, done
        world.apply(action)
        done.append(action)
        rollout = world.cluster(KEY).rollout
        for pod in PODS:
            stage = rollout.stage(pod) if rollout is not None else None
            if stage is not None and (not seen[pod] or seen[pod][-1] != stage):
                seen[pod].append(str(stage))
    raise AssertionError("no steady state:\n" + "\n".join(world.log[-20:]))


def test_an_upgrade_records_each_pods_stage_from_pending_to_done() -> None:
    """Invariant: the record follows the planner's own rules: a pod is pending until deleted, replacing until Ready
    at the new revision, then at each step kind it still has to run, and done only once they all ran."""
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)))
    seen, done = _run(world, desired(HELLO2, HELLO_DEV))
    every = [Stage.PENDING, Stage.REPLACING, Stage.MIGRATING, Stage.HOOK, Stage.WAITING_GATE, Stage.DONE]
    assert seen == {pod: every for pod in PODS}, seen
    records = [a for a in done if isinstance(a, A.RecordStages)]
    assert records and all(a.cluster_key == KEY for a in records)
    # each record is written before the work it describes, and a stage is never recorded twice in a row
    assert not any(isinstance(a, A.RecordStages) and isinstance(b, A.RecordStages) for a, b in zip(done, done[1:]))
    final = world.cluster(KEY).rollout
    assert final.phase == "Idle" and {str(final.stage(p)) for p in PODS} == {Stage.DONE}


def test_no_stage_is_recorded_while_nothing_moves() -> None:
    """A cluster at its version (no attempt running) gets no RecordStages: steady state stays an empty plan."""
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)))
    assert plan(desired(HELLO1, HELLO_DEV), world.state, now=world.now).empty
