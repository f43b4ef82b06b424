"""Pure planner tests for rollback: reverts planned as downgrades, refused reverts, the failure policy, and
waves with soak, run through tests/plan/kdworld's model of the cluster."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from gitops_kd.plan import actions as A
from gitops_kd.plan import plan
from gitops_kd.plan.waves import parse_time
from gitops_kd.spec import KDApp, KDCluster
from tests.plan.kdworld import (
    HELLO1,
    HELLO2,
    HELLO_DEV,
    NS,
    FakeCluster,
    desired,
    live_cluster,
    load_text,
    observed,
)

KEY = (NS, "hello-dev")
PROD = (NS, "hello-prod")


def app2(**stanza: Any) -> KDApp:
    """hello 2.0.0 with upgrade stanza fields replaced (a value None removes the field)."""
    doc = {
        "apiVersion": "kubedirector.hpe.com/v1beta1",
        "kind": "KubeDirectorApp",
        "metadata": {"name": HELLO2.name},
        "spec": HELLO2.body["spec"],
    }
    for k, v in stanza.items():
        if v is None:
            doc["spec"]["upgrade"].pop(k, None)
        else:
            doc["spec"]["upgrade"][k] = v
    return load_text("apps/hello.yaml", doc)


def prod(wave: int = 1, annotations: dict[str, str] | None = None) -> KDCluster:
    body = HELLO_DEV.body
    body["metadata"] = {"name": "hello-prod", "labels": {"gitops-kd.io/wave": str(wave)}}
    if annotations:
        body["metadata"]["annotations"] = annotations
    return load_text("clusters/hello-prod.yaml", body)


def step(world: FakeCluster, want: Any, **kw: Any) -> A.Action | None:
    p = plan(want, world.state, now=world.now, **kw)
    assert not p.refusals, p.describe()
    action = p.next()
    if action is not None:
        world.apply(action)
    return action


def run_until(world: FakeCluster, want: Any, stop: Any, *, limit: int = 400, **kw: Any) -> list[A.Action]:
    done: list[A.Action] = []
    for _ in range(limit):
        p = plan(want, world.state, now=world.now, **kw)
        assert not p.refusals, p.describe()
        action = p.next()
        if action is None or stop(action):
            return done
        world.apply(action)
        done.append(action)
    raise AssertionError("did not stop:\n" + "\n".join(world.log[-15:]))


def stalled_after_first_pod(app: KDApp) -> FakeCluster:
    """hello-dev upgraded to ``app`` until its first (controller) pod never becomes Ready: Stalled."""
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)))
    want = desired(app, HELLO_DEV)
    run_until(world, want, lambda a: isinstance(a, A.DeletePod))
    step(world, want)  # DeletePod of the controller pod
    world.tick(1)  # recreated at 2.0.0, never Ready from now on
    world.now += timedelta(seconds=400)
    run_until(world, want, lambda a: not isinstance(a, A.RecordStages))  # the pod's stage recorded first
    stall = plan(want, world.state, now=world.now).next()
    assert isinstance(stall, A.Stall) and stall.reason == "PodNotReady"
    world.apply(stall)
    return world


# -- reverts --------------------------------------------------------------------------------------------------
def test_revert_of_a_half_done_upgrade_is_a_downgrade_from_its_target_with_restore() -> None:
    world = stalled_after_first_pod(HELLO2)
    back = desired(HELLO1, HELLO_DEV, commit="revert")
    ensure = plan(back, world.state, now=world.now).next()
    assert isinstance(ensure, A.EnsureRollout)
    assert (ensure.direction, ensure.from_version, ensure.target_version) == ("downgrade", "2.0.0", "1.0.0")
    world.apply(ensure)
    step(world, back)  # ApplyApp 1.0.0
    patch = next(a for a in plan(back, world.state, now=world.now).actions if isinstance(a, A.PatchTemplate))
    env = {e["name"]: e["value"] for e in patch.patch_body["spec"]["template"]["spec"]["initContainers"][0]["env"]}
    assert "restore=/var/lib/hello" in env["GITOPS_KD_DIRS"] and env["GITOPS_KD_FROM_VERSION"] == "2.0.0"
    # the never-Ready pod is the first to go: it is down, so no other pod may be replaced before it
    actions = run_until(world, back, lambda a: False)
    deleted = [a.pod for a in actions if isinstance(a, A.DeletePod)]
    assert deleted[0] == "kdss-controller-0" and len(deleted) == 3
    assert not [a for a in actions if isinstance(a, (A.RunStep, A.StartGate, A.CheckGate))]
    assert world.cluster(KEY).rollout.app_version == "1.0.0" and world.cluster(KEY).rollout.phase == "Idle"


def test_revert_the_live_version_does_not_allow_is_refused_naming_the_file() -> None:
    no_way_back = app2(downgrade=None)
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)))
    run_until(world, desired(no_way_back, HELLO_DEV), lambda a: False)
    p = plan(desired(HELLO1, HELLO_DEV, commit="revert"), world.state, now=world.now)
    assert p.refused and not p.actions
    assert [(r.file, r.field) for r in p.refusals] == [("apps/hello.yaml", "spec.version")]
    assert "downgrade 2.0.0 -> 1.0.0 is refused" in p.refusals[0].reason


# -- failure policy -------------------------------------------------------------------------------------------
def test_halt_is_handled_once_naming_the_commit() -> None:
    world = stalled_after_first_pod(HELLO2)
    p = plan(desired(HELLO2, HELLO_DEV), world.state, now=world.now)
    assert [type(a).__name__ for a in p.actions] == ["HandleFailure"]
    handle = p.next()
    assert (handle.policy, handle.commit, handle.reason, handle.revert) == ("halt", "c1", "PodNotReady", False)
    assert "revert commit c1" in handle.describe()
    world.apply(handle)
    assert plan(desired(HELLO2, HELLO_DEV), world.state, now=world.now + timedelta(hours=1)).empty


def test_revert_commit_policy_asks_for_a_revert_of_the_offending_commit() -> None:
    app = app2(failurePolicy="revert-commit")
    world = stalled_after_first_pod(app)
    handle = plan(desired(app, HELLO_DEV), world.state, now=world.now).next()
    assert isinstance(handle, A.HandleFailure)
    assert (handle.policy, handle.revert, handle.commit) == ("revert-commit", True, "c1")
    assert (handle.from_version, handle.target_version) == ("1.0.0", "2.0.0")


def test_revert_commit_without_a_way_back_falls_back_to_halt_and_says_why() -> None:
    app = app2(failurePolicy="revert-commit", downgrade=None)
    world = stalled_after_first_pod(app)
    handle = plan(desired(app, HELLO_DEV), world.state, now=world.now).next()
    assert isinstance(handle, A.HandleFailure) and not handle.revert
    assert "allows no downgrade to 1.0.0" in handle.note


# -- waves ----------------------------------------------------------------------------------------------------
def two_waves(soak_annotation: str | None = None) -> tuple[FakeCluster, Any]:
    cluster = prod(annotations={"gitops-kd.io/wave-soak-seconds": soak_annotation} if soak_annotation else None)
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV), live_cluster(HELLO1, cluster))))
    return world, desired(HELLO2, HELLO_DEV, cluster)


def test_later_wave_waits_for_ready_plus_soak() -> None:
    world, want = two_waves()
    soak = 120.0
    actions = run_until(
        world, want, lambda a: isinstance(a, A.Wait) and a.cluster == PROD and "soak" in a.reason, wave_soak_seconds=soak
    )
    assert not [a for a in actions if a.cluster_key == PROD and not isinstance(a, (A.EnsureRollout, A.NoteStep, A.Wait))]
    steps = [a.step for a in actions if isinstance(a, A.NoteStep)]  # one note per reason, no time left in it
    assert steps == [
        "waiting for cluster default/hello-dev of app hello (wave 0) to be Ready at the target first",
        "waiting for cluster default/hello-dev of app hello (wave 0) to soak 120s after becoming Ready",
    ]
    dev = world.cluster(KEY).rollout
    assert dev.phase == "Idle" and dev.app_version == "2.0.0"
    ready_at = parse_time(dev.conditions[0]["lastTransitionTime"])
    # wave 0 is Ready at the target: wave 1 still waits for the soak, and says how long is left
    wait = plan(want, world.state, now=world.now, wave_soak_seconds=soak).next()
    assert isinstance(wait, A.Wait) and wait.cluster == PROD and "soak 120s" in wait.reason
    assert 0 < wait.requeue_after_seconds <= soak
    world.now = ready_at + timedelta(seconds=soak - 1)
    assert isinstance(plan(want, world.state, now=world.now, wave_soak_seconds=soak).next(), A.Wait)
    world.now = ready_at + timedelta(seconds=soak + 1)
    go = plan(want, world.state, now=world.now, wave_soak_seconds=soak).next()
    assert go.cluster_key == PROD and not isinstance(go, A.Wait)
    run_until(world, want, lambda a: False, wave_soak_seconds=soak)
    assert world.cluster(PROD).rollout.app_version == "2.0.0"


def test_soak_annotation_overrides_the_controller_default() -> None:
    body = HELLO_DEV.body
    body["metadata"]["annotations"] = {"gitops-kd.io/wave-soak-seconds": "30"}
    dev = load_text("clusters/hello-dev.yaml", body)
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, dev), live_cluster(HELLO1, prod()))))
    want = desired(HELLO2, dev, prod())
    run_until(world, want, lambda a: isinstance(a, A.Wait) and "soak" in a.reason, wave_soak_seconds=999)
    wait = plan(want, world.state, now=world.now, wave_soak_seconds=999).next()
    assert "soak 30s" in wait.reason


def test_bad_soak_annotation_is_refused_naming_the_file() -> None:
    world, _ = two_waves()
    want = desired(HELLO2, HELLO_DEV, prod(annotations={"gitops-kd.io/wave-soak-seconds": "soon"}))
    p = plan(want, world.state, now=world.now)
    assert p.refused and p.refusals[0].file == "clusters/hello-prod.yaml"
    assert "wave-soak-seconds" in p.refusals[0].field


def test_stalled_earlier_wave_holds_the_later_wave() -> None:
    world, want = two_waves()
    run_until(world, want, lambda a: isinstance(a, A.DeletePod))
    step(world, want)
    world.tick(1)  # hello-dev's first pod recreated, never Ready
    world.now += timedelta(seconds=400)
    actions = run_until(world, want, lambda a: isinstance(a, A.Wait))
    assert world.cluster(KEY).rollout.phase == "Stalled"
    assert not [a for a in actions if a.cluster_key == PROD and not isinstance(a, (A.EnsureRollout, A.NoteStep))]
    wait = plan(want, world.state, now=world.now + timedelta(hours=1)).next()
    assert isinstance(wait, A.Wait) and wait.cluster == PROD and "hello-dev" in wait.reason


def test_later_wave_already_at_the_target_is_not_held() -> None:
    """A wave-1 cluster that is Idle at the target keeps its normal maintenance (drift repair) while wave 0 rolls."""
    world, want = two_waves()
    world = FakeCluster(observed((HELLO2,), (live_cluster(HELLO1, HELLO_DEV), live_cluster(HELLO2, prod()))))
    p = plan(want, world.state, now=world.now)
    assert not [a for a in p.actions if a.cluster_key == PROD]
