"""plan() on stock KubeDirector: the KDApp clusters use is held at its old spec; what the cluster shows decides the
version it runs; KubeDirector rebuilding a role from the held KDApp is a rebuild that runs no data rule again; what
stock KubeDirector cannot do is refused before anything is written (docs/design/stock-kubedirector.md)."""

from __future__ import annotations

from dataclasses import replace

from gitops_kd.observe import ObservedApp, ObservedState
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
    kd_template,
    live_app,
    live_cluster,
    load_text,
    observed,
    revision_of,
    with_pod,
)

KEY = (NS, "hello-dev")
V1 = "gitops-kd/hello:1.0.0"


def upgraded() -> FakeCluster:
    """hello-dev upgraded to 2.0.0 at the StatefulSet level, its KDApp held at 1.0.0."""
    world = FakeCluster(observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)))
    want = desired(HELLO2, HELLO_DEV)
    for _ in range(200):
        action = plan(want, world.state, now=world.now).next()
        if action is None:
            break
        world.apply(action)
    assert world.cluster(KEY).rollout.app_version == "2.0.0"
    assert world.state.apps[(NS, "hello")].version == "1.0.0"
    return world


def test_a_role_kubedirector_rebuilds_from_the_held_kdapp_is_rebuilt_without_data_rules() -> None:
    """Invariant: KubeDirector re-creating a role's StatefulSet from the KDApp it holds (old image, none of
    gitops-kd's template fields) is reverted like drift: a rebuild at 2.0.0 that patches the template back with
    the data at 2.0.0 already (GITOPS_KD_FROM_VERSION = the target: no data rule runs again) and replaces the
    pods running 1.0.0 one at a time, with no migration, hook or gate."""
    world = upgraded()
    c = world.cluster(KEY)
    template = kd_template(HELLO1, HELLO_DEV, "worker")
    sts = replace(
        c.statefulsets["worker"],
        template=template,
        update_strategy="RollingUpdate",
        update_revision=revision_of(template),
        current_revision=revision_of(template),
    )
    c = replace(c, statefulsets={**c.statefulsets, "worker": sts})
    for pod in c.role_pods("worker"):
        c = with_pod(c, pod.name, image=V1, revision=revision_of(template))
    world.put(c)
    want = desired(HELLO2, HELLO_DEV)
    first = plan(want, world.state, now=world.now)
    ensure = first.next()
    assert isinstance(ensure, A.EnsureRollout) and ensure.direction == A.REBUILD, first.describe()
    [patch] = [a for a in first.actions if isinstance(a, A.PatchTemplate) and a.role == "worker"]
    env = {e["name"]: e["value"] for e in patch.patch_body["spec"]["template"]["spec"]["initContainers"][0]["env"]}
    assert env["GITOPS_KD_FROM_VERSION"] == env["GITOPS_KD_VERSION"] == "2.0.0"
    assert "ApplyApp" not in [type(a).__name__ for a in first.actions]
    done: list[A.Action] = []
    for _ in range(200):
        action = plan(want, world.state, now=world.now).next()
        if action is None:
            break
        world.apply(action)
        done.append(action)
        _run_template_images(world)
    assert sorted(a.pod for a in done if isinstance(a, A.DeletePod)) == ["kdss-worker-0", "kdss-worker-1"]
    assert not [a for a in done if isinstance(a, (A.RunStep, A.StartGate, A.CheckGate))]
    assert world.cluster(KEY).rollout.app_version == "2.0.0"


def _run_template_images(world: FakeCluster) -> None:
    """Pods at their StatefulSet's update revision run its template's app image (the model keeps images as is)."""
    c = world.cluster(KEY)
    for pod in c.all_pods():
        sts = c.statefulsets[pod.role]
        image = next(x["image"] for x in sts.template["spec"]["containers"] if x["name"] == "app")
        if pod.revision == sts.update_revision and pod.image != image:
            c = with_pod(c, pod.name, image=image)
    world.put(c)


def test_the_running_version_comes_from_the_templates_when_the_rollout_is_lost() -> None:
    """The KDApp is held at 1.0.0 and the KDRollout was deleted: the templates say 2.0.0, so the cluster is
    adopted at 2.0.0 (no pod replaced), not upgraded again from the KDApp's 1.0.0."""
    world = upgraded()
    world.put(replace(world.cluster(KEY), rollout=None))
    for pod in world.cluster(KEY).all_pods():
        world.put(with_pod(world.cluster(KEY), pod.name, image="gitops-kd/hello:2.0.0"))
    p = plan(desired(HELLO2, HELLO_DEV), world.state, now=world.now)
    ensure = p.next()
    assert isinstance(ensure, A.EnsureRollout) and ensure.direction == A.ADOPT, p.describe()
    assert not [a for a in p.actions if isinstance(a, A.DeletePod)]


def test_a_revert_finds_the_downgrade_rules_in_the_rollout_not_the_held_kdapp() -> None:
    world = upgraded()
    back = plan(desired(HELLO1, HELLO_DEV, commit="c3"), world.state, now=world.now)
    assert not back.refused, back.describe()
    ensure = back.next()
    assert isinstance(ensure, A.EnsureRollout) and (ensure.direction, ensure.from_version) == ("downgrade", "2.0.0")
    assert ensure.from_stanza is not None  # 2.0.0's stanza, recorded as the upgrade's targetStanza


def test_what_the_held_kdapp_cannot_carry_is_refused_before_anything_is_written() -> None:
    body = HELLO2.body
    worker = next(r for r in body["spec"]["roles"] if r["id"] == "worker")
    worker["cardinality"] = "2+"
    more = load_text("apps/hello.yaml", body)
    p = plan(desired(more, HELLO_DEV), observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),)), now=T0)
    assert p.refused and p.actions == (), p.describe()
    [refusal] = p.refusals
    assert refusal.field == "spec.roles[worker].cardinality"
    assert "KubeDirector holds KDApp hello at 1.0.0 while default/hello-dev use it" in refusal.reason


def test_nothing_holds_an_app_no_cluster_uses() -> None:
    p = plan(desired(HELLO2), observed((HELLO1,), ()), now=T0)
    assert [type(a).__name__ for a in p.actions] == ["ApplyApp"] and p.kept == ()


def test_a_kdapp_made_without_gitops_kd_is_held_only_when_git_changes_its_spec() -> None:
    """A KDApp created by hand (no applied-spec digest) that a cluster uses: the same spec gets its annotations
    (KubeDirector admits metadata edits); another spec is held, never a write KubeDirector would refuse."""
    raw = thaw(live_app(HELLO1).raw)
    raw["metadata"]["annotations"] = {}
    hand = ObservedApp(NS, "hello", "1.0.0", None, "1", raw)
    cluster = live_cluster(HELLO1, HELLO_DEV)
    same = plan(desired(HELLO1, HELLO_DEV), ObservedState({(NS, "hello"): hand}, {KEY: cluster}), now=T0)
    assert [type(a).__name__ for a in same.actions] == ["ApplyApp"] and same.kept == (), same.describe()
    body = HELLO1.body
    body["spec"]["label"]["description"] = "changed in Git"
    changed = load_text("apps/hello.yaml", body)
    held = plan(desired(changed, HELLO_DEV), ObservedState({(NS, "hello"): hand}, {KEY: cluster}), now=T0)
    assert held.actions == () and "KDApp hello held at 1.0.0 by KubeDirector" in held.kept[0], held.describe()
