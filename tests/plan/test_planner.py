"""plan(): table-driven states of the hello app (repo-template 1.0.0 and examples/hello-2.0.0) and whole
rollouts run through a model of the cluster."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta

import pytest

from gitops_kd.observe import ObservedRollout, ObservedState, PodProgress
from gitops_kd.plan import actions as A
from gitops_kd.plan import plan as full_plan
from gitops_kd.spec.upgrade import UpgradeSpec
from gitops_kd.status import conditions as cond
from plan.kdworld import (
    HELLO1,
    HELLO2,
    HELLO_DEV,
    NS,
    T0,
    FakeCluster,
    desired,
    live_cluster,
    observed,
    set_cluster,
    with_pod,
    with_rollout,
)

KEY = (NS, "hello-dev")


def plan(*args, **kwargs) -> A.Plan:
    """The planner's plan without its RecordStages: these tests check the work actions; which stage the planner
    records for each pod, and when, is tests/plan/test_pod_stages.py's."""
    p = full_plan(*args, **kwargs)
    return replace(p, actions=tuple(a for a in p.actions if not isinstance(a, A.RecordStages)))


def kinds(p: A.Plan) -> list[str]:
    return [type(a).__name__ for a in p.actions]


def run_to_steady(world: FakeCluster, want, *, limit: int = 300) -> list[A.Action]:
    """Plan, execute the first action, repeat until the plan is empty; checks one-pod-down throughout."""
    done: list[A.Action] = []
    for _ in range(limit):
        p = plan(want, world.state, now=world.now)
        assert not p.refusals, p.describe()
        action = p.next()
        if action is None:
            return done
        world.apply(action)
        done.append(action)
        assert len(world.down(KEY)) <= 1, f"two pods down after {action.describe()}: {world.down(KEY)}"
    raise AssertionError(f"no steady state after {limit} steps:\n" + "\n".join(world.log[-20:]))


def upgrading_world(**kw) -> FakeCluster:
    """hello-dev at 1.0.0 with 2.0.0 desired, after EnsureRollout, ApplyApp, template and port patches."""
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)), **kw)
    want = desired(HELLO2, HELLO_DEV)
    while not isinstance(plan(want, world.state, now=world.now).next(), A.DeletePod):
        world.apply(plan(want, world.state, now=world.now).next())
    return world


def test_steady_state_is_an_empty_plan() -> None:
    p = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)), now=T0)
    assert p.actions == () and p.refusals == () and p.empty
    assert p.describe() == "in sync: nothing to do"


def test_steady_state_ignores_a_pod_that_is_down_on_its_own() -> None:
    c = with_pod(live_cluster(HELLO1, HELLO_DEV), "kdss-worker-0", ready=False)
    assert plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (c,)), now=T0).empty


def test_version_bump_plans_the_whole_sequence() -> None:
    live = live_cluster(HELLO1, HELLO_DEV, managed=False)
    p = plan(desired(HELLO2, HELLO_DEV), observed((HELLO1,), (live,)), now=T0)
    # stock KubeDirector holds the KDApp the cluster uses: no ApplyApp, the upgrade is at the StatefulSet level
    assert kinds(p) == [
        "EnsureRollout",
        "SetOnDelete",
        "SetOnDelete",
        "PatchTemplate",
        "PatchTemplate",
        "DeletePod",
    ]
    ensure = p.actions[0]
    assert (ensure.direction, ensure.from_version, ensure.target_version, ensure.commit) == ("upgrade", "1.0.0", "2.0.0", "c1")
    assert UpgradeSpec.from_annotation(ensure.target_stanza) == HELLO2.upgrade  # kept where no KDApp holds it
    assert p.kept == (
        "KubeDirectorApp default/hello not applied: KDApp hello held at 1.0.0 by KubeDirector while in "
        "use; clusters run 2.0.0 at the StatefulSet level (used by default/hello-dev; applied once no "
        "cluster uses it)",
    )
    assert [a.role for a in p.actions if isinstance(a, A.PatchTemplate)] == ["controller", "worker"]
    # each member Service moves with its own pod (tests/plan/test_service_ports.py), none before the first deletion
    assert p.actions[-1].pod == "kdss-controller-0"  # roleOrder: controller first
    assert p.next() is ensure
    assert "1. start upgrade of default/hello-dev: hello 1.0.0 -> 2.0.0" in p.describe()


def test_rollout_replaces_pods_in_role_order_highest_ordinal_first() -> None:
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)))
    want = desired(HELLO2, HELLO_DEV)
    actions = run_to_steady(world, want)
    deleted = [a.pod for a in actions if isinstance(a, A.DeletePod)]
    assert deleted == ["kdss-controller-0", "kdss-worker-1", "kdss-worker-0"]
    # after each replacement: migration, hook, gate, before the next deletion
    per_pod = {}
    for a in actions:
        if isinstance(a, (A.RunStep, A.StartGate, A.CheckGate, A.DeletePod)):
            per_pod.setdefault(a.pod, []).append(a.step_id if isinstance(a, A.RunStep) else type(a).__name__)
    assert per_pod["kdss-worker-1"] == [
        "DeletePod",
        "2.0.0/kdss-worker-1/migrate/var/lib/hello",
        "2.0.0/kdss-worker-1/hook",
        "StartGate",
        "CheckGate",
    ]
    order = [(type(a).__name__, getattr(a, "pod", None)) for a in actions]
    assert order.index(("CheckGate", "kdss-controller-0")) < order.index(("DeletePod", "kdss-worker-1"))
    assert isinstance(actions[-1], A.FinishRollout) and actions[-1].version == "2.0.0"
    ro = world.cluster(KEY).rollout
    assert (ro.phase, ro.app_version) == ("Idle", "2.0.0")
    assert plan(want, world.state, now=world.now).empty


def test_pod_being_deleted_means_wait() -> None:
    world = upgrading_world()
    world.apply(plan(desired(HELLO2, HELLO_DEV), world.state, now=world.now).next())  # DeletePod controller-0
    p = plan(desired(HELLO2, HELLO_DEV), world.state, now=world.now)
    assert kinds(p) == ["Wait"] and p.actions[0].cluster == KEY
    assert "kdss-controller-0" in p.actions[0].reason


def _after_replacement(world: FakeCluster, ready: bool = True) -> None:
    want = desired(HELLO2, HELLO_DEV)
    world.apply(plan(want, world.state, now=world.now).next())  # DeletePod
    world.tick(1)  # recreated, not Ready
    if ready:
        world.tick(1)


def test_new_pod_not_ready_waits_then_stalls_after_pod_ready_timeout() -> None:
    world = upgrading_world()
    _after_replacement(world, ready=False)
    want = desired(HELLO2, HELLO_DEV)
    assert kinds(plan(want, world.state, now=world.now)) == ["Wait"]
    late = world.now + timedelta(seconds=301)  # podReadyTimeoutSeconds 300 in hello 2.0.0
    p = plan(want, world.state, now=late)
    assert kinds(p) == ["Stall"] and p.actions[0].reason == "PodNotReady"
    assert "kdss-controller-0" in p.actions[0].message


def test_ready_pod_runs_migration_then_hook() -> None:
    world = upgrading_world()
    _after_replacement(world)
    want = desired(HELLO2, HELLO_DEV)
    step = plan(want, world.state, now=world.now).next()
    assert isinstance(step, A.RunStep) and step.kind == "migrate" and step.directory == "/var/lib/hello"
    assert step.command[-1].startswith("cp -a /var/lib/gitops-kd/old/var/lib/hello/.") and step.timeout_seconds == 120
    assert step.container == "app" and step.pod == "kdss-controller-0"
    world.apply(step)
    hook = plan(want, world.state, now=world.now).next()
    assert isinstance(hook, A.RunStep) and hook.kind == "hook" and hook.step_id == "2.0.0/kdss-controller-0/hook"
    assert hook.timeout_seconds == 60


def test_gate_start_check_period_and_timeout() -> None:
    world = upgrading_world(gate_failures=1000)
    _after_replacement(world)
    want = desired(HELLO2, HELLO_DEV)
    for _ in range(2):  # migration, hook
        world.apply(plan(want, world.state, now=world.now).next())
    start = plan(want, world.state, now=world.now).next()
    assert isinstance(start, A.StartGate) and start.pod == "kdss-controller-0"
    world.apply(start)
    check = plan(want, world.state, now=world.now).next()
    assert isinstance(check, A.CheckGate) and check.gate.period_seconds == 2
    world.apply(check)  # fails
    wait = plan(want, world.state, now=world.now).next()
    assert isinstance(wait, A.Wait) and wait.requeue_after_seconds == pytest.approx(2)
    assert isinstance(plan(want, world.state, now=world.now + timedelta(seconds=2)).next(), A.CheckGate)
    p = plan(want, world.state, now=world.now + timedelta(seconds=121))
    assert kinds(p) == ["Stall"] and p.actions[0].reason == "GateTimeout"


def test_gate_not_passed_blocks_the_next_deletion() -> None:
    world = upgrading_world(gate_failures=3)
    _after_replacement(world)
    want = desired(HELLO2, HELLO_DEV)
    seen = []
    for _ in range(12):
        a = plan(want, world.state, now=world.now).next()
        seen.append(type(a).__name__)
        if isinstance(a, A.DeletePod):
            assert a.pod == "kdss-worker-1"
            break
        world.apply(a)
    assert seen.count("CheckGate") == 4 and seen[-1] == "DeletePod"


def test_stalled_rollout_stays_stalled_until_a_new_commit() -> None:
    world = upgrading_world()
    _after_replacement(world, ready=False)
    want = desired(HELLO2, HELLO_DEV)
    world.apply(plan(want, world.state, now=world.now + timedelta(seconds=400)).next())  # Stall
    assert world.cluster(KEY).rollout.phase == "Stalled"
    halt = plan(want, world.state, now=world.now + timedelta(days=1))
    assert [type(a).__name__ for a in halt.actions] == ["HandleFailure"]  # once: the failure policy (halt)
    assert halt.next().policy == "halt" and halt.next().commit == "c1" and not halt.next().revert
    world.apply(halt.next())
    assert plan(want, world.state, now=world.now + timedelta(days=1)).empty
    retry = plan(desired(HELLO2, HELLO_DEV, commit="c2"), world.state, now=world.now)
    assert isinstance(retry.next(), A.EnsureRollout) and retry.next().commit == "c2"


def test_never_two_pods_down() -> None:
    world = upgrading_world()
    c = with_pod(world.cluster(KEY), "kdss-worker-0", ready=False)  # an old pod is down on its own
    p = plan(desired(HELLO2, HELLO_DEV), set_cluster(world.state, c), now=world.now)
    assert "DeletePod" not in kinds(p)
    assert kinds(p) == ["Wait"] and "kdss-worker-0" in p.actions[0].reason
    c = with_pod(world.cluster(KEY), "kdss-worker-1", deleting=True)
    p = plan(desired(HELLO2, HELLO_DEV), set_cluster(world.state, c), now=world.now)
    assert "DeletePod" not in kinds(p)


def test_missing_pod_counts_as_down() -> None:
    world = upgrading_world()
    c = world.cluster(KEY)
    c = replace(c, pods={**c.pods, "worker": c.pods["worker"][:1]})
    p = plan(desired(HELLO2, HELLO_DEV), set_cluster(world.state, c), now=world.now)
    # the StatefulSet recreates it from the new template: its own Service moves now (plan/services.py)
    assert kinds(p) == ["PatchServicePorts", "Wait"] and "kdss-worker-1" in p.actions[1].reason
    assert p.actions[0].service == "s-kdss-worker-1"


def test_unsettled_statefulset_waits_instead_of_finishing() -> None:
    world = upgrading_world()
    c = world.cluster(KEY)
    sts = replace(c.statefulsets["controller"], generation=9, observed_generation=8)
    c = replace(c, statefulsets={**c.statefulsets, "controller": sts})
    p = plan(desired(HELLO2, HELLO_DEV), set_cluster(world.state, c), now=world.now)
    assert kinds(p) == ["Wait"] and "kdss-controller" in p.actions[0].reason


def test_plan_is_deterministic() -> None:
    world = upgrading_world()
    want = desired(HELLO2, HELLO_DEV)
    first = plan(want, world.state, now=world.now)
    shuffled = list(world.state.clusters.items())
    random.Random(1).shuffle(shuffled)
    again = plan(want, ObservedState(dict(reversed(list(world.state.apps.items()))), dict(shuffled)), now=world.now)
    assert first == again and first.describe() == again.describe()


def test_downgrade_restores_and_runs_no_hooks() -> None:
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)))
    run_to_steady(world, desired(HELLO2, HELLO_DEV))
    back = desired(HELLO1, HELLO_DEV, commit="c3")
    p = plan(back, world.state, now=world.now)
    ensure = p.next()
    assert isinstance(ensure, A.EnsureRollout) and ensure.direction == "downgrade"
    assert (ensure.from_version, ensure.target_version) == ("2.0.0", "1.0.0")
    assert UpgradeSpec.from_annotation(ensure.from_stanza).rule_for_downgrade_to("1.0.0") is not None
    world.apply(ensure)
    assert world.state.apps[(NS, "hello")].version == "1.0.0"  # held by KubeDirector: 2.0.0's stanza is the rollout's
    patch = next(a for a in plan(back, world.state, now=world.now).actions if isinstance(a, A.PatchTemplate))
    env = {e["name"]: e["value"] for e in patch.patch_body["spec"]["template"]["spec"]["initContainers"][0]["env"]}
    assert env["GITOPS_KD_DIRS"] == "keep=/etc discard=/opt/hello/cache restore=/var/lib/hello"
    assert env["GITOPS_KD_FROM_VERSION"] == "2.0.0" and env["GITOPS_KD_VERSION"] == "1.0.0"
    actions = run_to_steady(world, back)
    assert [a.pod for a in actions if isinstance(a, A.DeletePod)] == ["kdss-controller-0", "kdss-worker-1", "kdss-worker-0"]
    assert not [a for a in actions if isinstance(a, (A.RunStep, A.CheckGate, A.StartGate))]
    assert world.cluster(KEY).rollout.app_version == "1.0.0"


def test_adoption_of_a_kubedirector_cluster_at_the_target() -> None:
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV, managed=False),)))
    want = desired(HELLO1, HELLO_DEV)
    first = plan(want, world.state, now=world.now).next()
    assert isinstance(first, A.EnsureRollout) and first.direction == "adopt" and first.target_version == "1.0.0"
    actions = run_to_steady(world, want)
    assert [type(a).__name__ for a in actions[:5]] == [
        "EnsureRollout",
        "SetOnDelete",
        "SetOnDelete",
        "PatchTemplate",
        "PatchTemplate",
    ]
    # adoption restarts nothing: the pods already run 1.0.0; the new template waits for the next upgrade
    assert not [a for a in actions if isinstance(a, (A.DeletePod, A.RunStep, A.CheckGate))]
    assert world.cluster(KEY).rollout.app_version == "1.0.0"
    upgrade = run_to_steady(world, desired(HELLO2, HELLO_DEV))
    assert len([a for a in upgrade if isinstance(a, A.DeletePod)]) == 3
    assert world.cluster(KEY).rollout.app_version == "2.0.0"


def test_a_cluster_gitops_kd_created_is_deployed_one_made_otherwise_is_adopted() -> None:
    """Invariant: the first record of a cluster gitops-kd itself created from Git (its applied-spec annotation) is
    a deploy, not an adoption; a cluster without it (made by hand or by another tool) is adopted."""
    from gitops_kd.constants import APPLIED_ANNOTATION
    from gitops_kd.spec.freeze import thaw

    created = live_cluster(HELLO1, HELLO_DEV, managed=False)
    assert APPLIED_ANNOTATION in created.raw["metadata"]["annotations"]
    first = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (created,)), now=T0).next()
    assert isinstance(first, A.EnsureRollout) and first.direction == "adopt" and first.deployed
    assert first.describe() == "record the first deploy of KubeDirectorCluster default/hello-dev at hello 1.0.0"
    raw = thaw(created.raw)
    del raw["metadata"]["annotations"][APPLIED_ANNOTATION]
    by_hand = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (replace(created, raw=raw),)), now=T0).next()
    assert isinstance(by_hand, A.EnsureRollout) and by_hand.direction == "adopt" and not by_hand.deployed
    assert by_hand.describe() == "adopt KubeDirectorCluster default/hello-dev at hello 1.0.0"


def test_managed_cluster_without_rollout_object_is_adopted() -> None:
    c = replace(live_cluster(HELLO1, HELLO_DEV), rollout=None)
    p = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (c,)), now=T0)
    assert kinds(p) == ["EnsureRollout"] and p.actions[0].direction == "adopt"


def _ready(rollout: ObservedRollout | None) -> bool:
    return rollout is not None and cond.is_true(rollout.conditions, cond.READY)


def test_an_adoption_is_ready_only_once_every_member_git_asks_for_is_ready() -> None:
    """Invariant: a first deploy or adoption never says Ready at a version while a member Git asks for is missing,
    not Ready or being deleted (the pods prove the version only once they run): it is recorded Reconciling, and
    FinishRollout makes it Ready once every member is."""
    want = desired(HELLO1, HELLO_DEV)
    fresh = replace(live_cluster(HELLO1, HELLO_DEV), rollout=None)
    starting = with_pod(fresh, "kdss-worker-0", ready=False, ready_since=None, created_at=T0)
    missing = replace(fresh, pods={**fresh.pods, "worker": fresh.pods["worker"][1:]})
    deleting = with_pod(fresh, "kdss-worker-0", deleting=True)
    for live in (starting, missing, deleting):
        world = FakeCluster(observed((HELLO1,), (live,)))
        first = plan(want, world.state, now=world.now).next()
        assert isinstance(first, A.EnsureRollout) and first.direction == "adopt" and not first.members_ready
        world.apply(first)
        ro = world.cluster(KEY).rollout
        assert ro is not None and ro.app_version == "1.0.0" and ro.reconciling and not _ready(ro)
        p = plan(want, world.state, now=world.now)
        assert p.actions and not any(isinstance(a, A.FinishRollout) for a in p.actions), p.describe()
        if live is missing:  # KubeDirector's StatefulSet controller creates it
            world.put(replace(world.cluster(KEY), pods=fresh.pods))
        world.tick(1)  # the pod comes up (a deleted one is recreated)
        world.tick(1)  # ... and is Ready
        assert kinds(plan(want, world.state, now=world.now)) == ["FinishRollout"]
        world.apply(plan(want, world.state, now=world.now).next())
        assert _ready(world.cluster(KEY).rollout)
        assert plan(want, world.state, now=world.now).empty
    every = plan(want, observed((HELLO1,), (fresh,)), now=T0)
    assert kinds(every) == ["EnsureRollout"] and every.actions[0].members_ready
    # a role whose StatefulSet KubeDirector has not sized yet (replicas 0, no pod): Git's members count
    unsized = replace(
        fresh,
        statefulsets={**fresh.statefulsets, "worker": replace(fresh.statefulsets["worker"], replicas=0)},
        pods={**fresh.pods, "worker": ()},
    )
    world = FakeCluster(observed((HELLO1,), (unsized,)))
    world.apply(plan(want, world.state, now=world.now).next())
    waiting = plan(want, world.state, now=world.now)
    assert kinds(waiting) == ["Wait"] and waiting.actions[0].reason == "the members of role worker to be Ready"
    world.put(replace(world.cluster(KEY), statefulsets=fresh.statefulsets, pods=fresh.pods))
    assert kinds(plan(want, world.state, now=world.now)) == ["FinishRollout"]
    # a member still not Ready podReadyTimeoutSeconds after its creation stalls the adoption, as in an upgrade
    stuck = FakeCluster(observed((HELLO1,), (with_pod(fresh, "kdss-worker-0", ready=False, ready_since=None),)))
    stuck.apply(plan(want, stuck.state, now=stuck.now).next())
    stall = plan(want, stuck.state, now=stuck.now).next()
    assert isinstance(stall, A.Stall) and stall.reason == "PodNotReady", stall


def test_missing_cluster_is_created_and_missing_app_applied() -> None:
    p = plan(desired(HELLO1, HELLO_DEV), ObservedState(), now=T0)
    assert kinds(p) == ["ApplyApp", "ApplyCluster"]
    create = p.actions[1]
    assert create.create and create.body["metadata"]["namespace"] == NS and create.body["spec"]["app"] == "hello"


def test_cluster_spec_change_is_applied() -> None:
    body = HELLO_DEV.body
    body["spec"]["roles"][1]["members"] = 3
    from plan.kdworld import load_text

    bigger = load_text("clusters/hello-dev.yaml", body)
    p = plan(desired(HELLO1, bigger), observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)), now=T0)
    assert kinds(p) == ["ApplyCluster"] and not p.actions[0].create


def test_progress_of_an_earlier_rollout_does_not_count() -> None:
    """Hook/gate flags are per rollout: pods done for 2.0.0 are not done for 3.0.0 (the rollout is reset)."""
    world = upgrading_world()
    c = with_rollout(world.cluster(KEY), pods={"kdss-controller-0": PodProgress("x", hook_done=True)})
    p = plan(desired(HELLO2, HELLO_DEV), set_cluster(world.state, c), now=world.now)
    assert isinstance(p.next(), A.DeletePod)


def test_later_wave_waits_for_the_earlier_one() -> None:
    from plan.kdworld import load_text

    body = HELLO_DEV.body
    body["metadata"] = {"name": "hello-prod", "labels": {"gitops-kd.io/wave": "1"}}
    prod = load_text("clusters/hello-prod.yaml", body)
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV), live_cluster(HELLO1, prod))))
    want = desired(HELLO2, HELLO_DEV, prod)
    p = plan(want, world.state, now=world.now)
    assert [a.cluster for a in p.actions if isinstance(a, A.EnsureRollout)] == ["hello-dev", "hello-prod"]
    waits = [a for a in p.actions if isinstance(a, A.Wait)]
    assert [w.cluster for w in waits] == [(NS, "hello-prod")] and "wave 0" in waits[0].reason
    actions = run_to_steady(world, want, limit=600)
    deleted = [a.cluster for a in actions if isinstance(a, A.DeletePod)]
    assert deleted == ["hello-dev"] * 3 + ["hello-prod"] * 3
    assert world.cluster((NS, "hello-prod")).rollout.app_version == "2.0.0"
    # the held rollout says what it waits for (once), and the note is cleared when the wave lets it go
    notes = [(a.cluster, a.step) for a in actions if isinstance(a, A.NoteStep)]
    assert notes == [
        ("hello-prod", "waiting for cluster default/hello-dev of app hello (wave 0) to be Ready at the target first"),
        ("hello-prod", None),
    ]
    first_prod_step = next(
        i
        for i, a in enumerate(actions)
        if a.cluster_key == (NS, "hello-prod") and isinstance(a, (A.SetOnDelete, A.PatchTemplate, A.DeletePod))
    )
    assert actions.index(next(a for a in actions if isinstance(a, A.NoteStep) and a.step is None)) < first_prod_step


def test_cluster_kubedirector_is_still_creating_is_not_adopted_nor_in_sync() -> None:
    full = live_cluster(HELLO1, HELLO_DEV, managed=False)
    first_role = next(iter(full.statefulsets))
    partial = replace(full, statefulsets={r: s for r, s in full.statefulsets.items() if r != first_role})
    want = desired(HELLO1, HELLO_DEV)
    p = plan(want, observed((HELLO1,), (partial,)), now=T0)
    assert kinds(p) == ["Wait"] and f"StatefulSet of role {first_role}" in p.actions[0].reason
    assert p.for_cluster(*KEY)  # not in sync: drift detection keeps treating it as converging
    managed = replace(live_cluster(HELLO1, HELLO_DEV), statefulsets=partial.statefulsets)
    p = plan(want, observed((HELLO1,), (managed,)), now=T0)
    assert kinds(p)[-1] == "Wait" and "FinishRollout" not in kinds(p)
    assert isinstance(plan(want, observed((HELLO1,), (full,)), now=T0).next(), A.EnsureRollout)


def test_a_suspended_cluster_holds_its_app_until_its_rollout_records_the_version_being_left() -> None:
    """Invariant: suspending a cluster never lets its KDApp move first: the downgrade's data rules come from the
    stanza being left, which the cluster's EnsureRollout records (it is planned before ApplyApp); once resumed,
    the rollout is recorded first, then the app applied."""
    from plan.kdworld import load_text

    body = HELLO_DEV.body
    body["metadata"] = {"name": "hello-prod"}
    prod = load_text("clusters/hello-prod.yaml", body)
    live = live_cluster(HELLO2, HELLO_DEV, from_version="1.0.0")
    other = live_cluster(HELLO2, prod, from_version="1.0.0")
    suspended = replace(live, rollout=replace(live.rollout, raw={"spec": {"suspend": True}}))
    have = observed((HELLO2,), (suspended, other))
    held = plan(desired(HELLO1, HELLO_DEV, prod), have, now=T0)
    assert kinds(held) == ["NoteStep", "Wait", "Wait", "Wait"], held.describe()  # nothing else of the app moves
    assert "KubeDirectorApp default/hello is applied once cluster default/hello-dev is resumed" in held.describe()
    assert "wait: default/hello-prod: the new version of its app waits for cluster default/hello-dev" in held.describe()
    resumed = plan(desired(HELLO1, HELLO_DEV), observed((HELLO2,), (live,)), now=T0)
    assert kinds(resumed)[0] == "EnsureRollout" and "ApplyApp" not in kinds(resumed), resumed.describe()
    assert resumed.actions[0].from_stanza is not None  # 2.0.0's stanza, with its downgrade.to rules
