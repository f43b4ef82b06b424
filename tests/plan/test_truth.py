"""plan/truth.py through plan(): a rollout Ready over pods that run another version is stalled even when the plan
is refused, and only then; what a version renders is recorded with Ready (status.images)."""

from __future__ import annotations

from dataclasses import replace

from gitops_kd.constants import StallReason
from gitops_kd.plan import actions as A
from gitops_kd.plan import plan
from gitops_kd.spec.freeze import thaw
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
    with_pod,
    with_rollout,
)

READY = ({"type": "Ready", "status": "True", "reason": "UpToDate", "message": "m"},)
V1, V2 = "gitops-kd/hello:1.0.0", "gitops-kd/hello:2.0.0"


def _moved(image: str, *, app: str = "hello-v2", ready: bool = True):  # type: ignore[no-untyped-def]
    """hello-dev Ready at 1.0.0 (images recorded), its spec.app switched to ``app`` and its pods running ``image``
    behind gitops-kd's back (what KubeDirector's live-app-upgrade branch does)."""
    c = with_rollout(
        live_cluster(HELLO1, HELLO_DEV),
        conditions=READY if ready else (),
        app="hello",
        raw={"status": {"images": {"controller": V1, "worker": V1}}},
    )
    for pod in c.all_pods():
        c = with_pod(c, pod.name, image=image)
    raw = thaw(c.raw)
    raw["spec"]["app"] = app
    return replace(c, app=app, raw=raw)


def test_a_refused_plan_stalls_a_rollout_ready_over_pods_of_another_version() -> None:
    """Invariant: Ready is never left standing over pods running another version, even when nothing may be
    written for the commit (the plan is refused)."""
    p = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (_moved(V2),)), now=T0)
    assert p.refused and [r.field for r in p.refusals] == ["spec.app"]
    [stall] = p.actions
    assert isinstance(stall, A.Stall) and stall.reason == StallReason.PODS_OFF_VERSION
    assert stall.message.startswith(f"pod kdss-controller-0 runs {V2}, not {V1} of hello 1.0.0 (and 2 more pod(s))")


def test_a_refused_plan_writes_nothing_when_the_pods_run_the_recorded_version() -> None:
    p = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (_moved(V1),)), now=T0)
    assert p.refused and p.actions == ()


def test_a_rollout_not_claiming_ready_is_not_stalled_again() -> None:
    p = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (_moved(V2, ready=False),)), now=T0)
    assert p.refused and p.actions == ()


def test_an_accepted_plan_rebuilds_pods_of_another_image_instead() -> None:
    c = with_rollout(live_cluster(HELLO1, HELLO_DEV), conditions=READY)
    c = with_pod(c, "kdss-worker-1", image=V2)
    p = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (c,)), now=T0)
    ensure = p.next()
    assert isinstance(ensure, A.EnsureRollout) and ensure.direction == A.REBUILD, p.describe()


def test_finish_and_adoption_record_what_the_version_renders() -> None:
    fresh = live_cluster(HELLO1, HELLO_DEV, rollout=False)
    ensure = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (fresh,)), now=T0).next()
    assert isinstance(ensure, A.EnsureRollout) and ensure.direction == A.ADOPT
    assert dict(ensure.images) == {"controller": V1, "worker": V1}
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)))
    want = desired(HELLO2, HELLO_DEV)
    finish: list[A.FinishRollout] = []
    for _ in range(200):
        action = plan(want, world.state, now=world.now).next()
        if action is None:
            break
        finish += [action] if isinstance(action, A.FinishRollout) else []
        world.apply(action)
    assert [dict(f.images) for f in finish] == [{"controller": V2, "worker": V2}]
    assert "KDApp hello held at 1.0.0 by KubeDirector while in use; clusters run 2.0.0" in finish[0].note
    assert world.state.apps[(NS, "hello")].version == "1.0.0"  # never written while the cluster uses it
