"""plan() on KubeDirector's live-app-upgrade branch: a commit moving hello-dev's spec.app to hello-v2 is judged with
the branch's rules, and run as EnsureRollout, ApplyApp of the target, SetOnDelete where needed, MarkUpgradable of the
app it leaves, then SwitchApp alone, then gitops-kd's own upgrade (plan/native.py); on stock KubeDirector the same
commit is refused with KubeDirector's read-only rule (docs/design/stock-kubedirector.md)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import yaml

from gitops_kd.constants import APPLIED_ANNOTATION
from gitops_kd.diff import app_manifest
from gitops_kd.kd.flavour import LIVE_UPGRADE, STOCK
from gitops_kd.kd.layout import KDAPP_KIND
from gitops_kd.kd.normalize import stored_spec
from gitops_kd.observe import ObservedApp, ObservedState
from gitops_kd.plan import actions as A
from gitops_kd.plan import plan
from gitops_kd.spec.freeze import thaw
from gitops_kd.spec.model import KDApp, KDCluster
from plan.kdworld import HELLO1, HELLO_DEV, NS, REPO, T0, FakeCluster, desired, live_cluster, load_text

KEY = (NS, "hello-dev")


def _hello_v2(**spec: Any) -> KDApp:
    doc = yaml.safe_load((REPO / "examples/hello-2.0.0.yaml").read_text())
    doc["metadata"]["name"] = "hello-v2"
    doc["spec"]["services"][0]["endpoint"]["port"] = 8080  # the branch admits image and version changes only
    doc["spec"].update(spec)
    return load_text("apps/hello-v2.yaml", doc)  # type: ignore[no-any-return]


def _on(app: str, **spec: Any) -> KDCluster:
    doc = HELLO_DEV.body
    doc["spec"] = {**doc["spec"], "app": app, **spec}
    return load_text("clusters/hello-dev.yaml", doc)  # type: ignore[no-any-return]


HELLO_V2 = _hello_v2()


def stored(app: KDApp, **spec: Any) -> ObservedApp:
    """The live KDApp as KubeDirector stores it (its webhook's normal form), with ``spec`` fields set."""
    raw = app_manifest(app, (NS, app.name))
    raw["spec"] = {**stored_spec(KDAPP_KIND, raw["spec"]), **spec}
    return ObservedApp(NS, app.name, app.version, app.upgrade, "1", raw)


class BranchCluster(FakeCluster):
    """FakeCluster plus the branch's writes: MarkUpgradable sets spec.upgradable, SwitchApp the app (KubeDirector
    then records status.upgradeInfo and says `updating`)."""

    def _ApplyApp(self, a: A.ApplyApp) -> None:
        app = HELLO_V2 if a.name == "hello-v2" else HELLO1
        self.state = replace(self.state, apps={**self.state.apps, (a.namespace, a.name): stored(app)})

    def _MarkUpgradable(self, a: A.MarkUpgradable) -> None:
        live = self.state.apps[(a.namespace, a.app)]
        raw = thaw(live.raw)
        raw["spec"]["upgradable"] = True
        self.state = replace(self.state, apps={**self.state.apps, (a.namespace, a.app): replace(live, raw=raw)})

    def _SwitchApp(self, a: A.SwitchApp) -> None:
        c = self.cluster(KEY)
        raw = thaw(c.raw)
        raw["spec"]["app"] = a.app
        raw["metadata"]["annotations"][APPLIED_ANNOTATION] = a.digest
        raw["status"] = {"state": "updating", "upgradeInfo": {"isRollingBack": False, "prevApp": a.previous}}
        self.put(replace(c, app=a.app, raw=raw))

    def _MarkKubeDirectorNotReady(self, a: A.MarkKubeDirectorNotReady) -> None:
        """Asked about once every pod runs the new app: the branch then reports the cluster configured again."""
        super()._MarkKubeDirectorNotReady(a)
        c = self.cluster(KEY)
        raw = thaw(c.raw)
        raw["status"]["state"] = "configured"
        self.put(replace(c, raw=raw))


def branch_state(*apps: ObservedApp, flavour: str = LIVE_UPGRADE) -> ObservedState:
    live = {(NS, a.name): a for a in apps}
    return ObservedState(live, {KEY: live_cluster(HELLO1, HELLO_DEV)}, flavour=flavour)


def _run(world: FakeCluster, want: Any) -> list[A.Action]:
    done: list[A.Action] = []
    for _ in range(300):
        action = plan(want, world.state, now=world.now).next()
        if action is None:
            return done
        world.apply(action)
        done.append(action)
        for rid, sts in world.cluster(KEY).statefulsets.items():  # the kubelet: replaced pods run the template
            for pod in world.cluster(KEY).pods[rid]:
                if pod.deleting:
                    c = world.cluster(KEY)
                    pods = {
                        r: tuple(
                            replace(p, deleting=False, ready=True, revision=sts.update_revision, uid=p.uid + "x")
                            if p.name == pod.name
                            else p
                            for p in ps
                        )
                        for r, ps in c.pods.items()
                    }
                    world.put(replace(c, pods=pods))
    raise AssertionError("the plan did not settle")


def test_a_switch_runs_natively_the_switch_first_then_gitops_kds_own_order() -> None:
    """Invariants: SwitchApp comes after the attempt is recorded, the target applied and the app left marked
    upgradable, and before any template patch or pod replacement; pods are then replaced controller first."""
    world = BranchCluster(branch_state(stored(HELLO1)))
    want = desired(HELLO1, HELLO_V2, _on("hello-v2"))
    first = plan(want, world.state, now=world.now)
    assert not first.refused, first.refusals
    assert not [a for a in first.actions if isinstance(a, (A.ApplyCluster, A.PatchTemplate, A.DeletePod))]
    done = _run(world, want)
    kinds = [type(a).__name__ for a in done]
    switched = kinds.index("SwitchApp")
    assert kinds[:switched] == ["EnsureRollout", "ApplyApp", "MarkUpgradable"], kinds
    assert "PatchTemplate" in kinds[switched:] and "ApplyCluster" not in kinds
    deleted = [a.role for a in done if isinstance(a, A.DeletePod)]
    assert deleted == ["controller", "worker", "worker"], kinds
    assert world.cluster(KEY).rollout.app_version == "2.0.0" and world.cluster(KEY).app == "hello-v2"


def test_the_switch_waits_for_ondelete_and_a_configured_cluster() -> None:
    state = branch_state(stored(HELLO1, upgradable=True), stored(HELLO_V2))
    c = state.clusters[KEY]
    c = replace(c, statefulsets={**c.statefulsets, "worker": replace(c.statefulsets["worker"], update_strategy="RollingUpdate")})
    want = desired(HELLO1, HELLO_V2, _on("hello-v2"))
    world = BranchCluster(replace(state, clusters={KEY: c}))
    world.apply(plan(want, world.state, now=world.now).next())  # EnsureRollout
    steps = plan(want, world.state, now=world.now).actions
    assert [type(a).__name__ for a in steps] == ["SetOnDelete"], steps
    world.apply(steps[0])
    raw = thaw(world.cluster(KEY).raw)
    raw["status"]["state"] = "updating"
    world.put(replace(world.cluster(KEY), raw=raw))
    steps = plan(want, world.state, now=world.now).actions
    assert [type(a).__name__ for a in steps] == ["Wait"] and "configured" in steps[0].reason, steps


def test_on_stock_kubedirector_the_switch_is_refused_as_read_only() -> None:
    result = plan(desired(HELLO1, HELLO_V2, _on("hello-v2")), branch_state(stored(HELLO1), flavour=STOCK), now=T0)
    assert any(r.field == "spec.app" and "The app property is read-only." in r.reason for r in result.refusals)
    assert not [a for a in result.actions if isinstance(a, (A.SwitchApp, A.ApplyApp, A.MarkUpgradable))]


def _refusals(want: Any, *apps: ObservedApp) -> list[str]:
    result = plan(want, branch_state(*apps), now=T0)
    assert not result.actions or all(isinstance(a, A.Wait) for a in result.actions), result.actions
    return [r.reason for r in result.refusals if r.field == "spec.app"]


def test_the_branchs_refusals_are_the_commits() -> None:
    too_different = _hello_v2(label={"name": "Hello", "description": "other"})
    [reason] = _refusals(desired(HELLO1, too_different, _on("hello-v2")), stored(HELLO1))
    assert "The candidate app hello-v2 spec is too different from the actual app hello spec." in reason
    older = _hello_v2(version="0.9.0", defaultImageRepoTag="gitops-kd/hello:0.9.0")
    [reason] = _refusals(desired(HELLO1, older, _on("hello-v2")), stored(HELLO1))
    assert "The candidate app version 0.9.0 is not newer than version 1.0.0" in reason
    git_says_no = load_text("apps/hello.yaml", {**HELLO1.body, "spec": {**HELLO1.body["spec"], "upgradable": False}})
    [reason] = _refusals(desired(git_says_no, HELLO_V2, _on("hello-v2")), stored(HELLO1))
    assert "The application gitops-kd/hello of version 1.0.0 doesn't support live upgrade." in reason
    [reason] = _refusals(desired(HELLO1, HELLO_V2, _on("hello-v2", serviceType="NodePort")), stored(HELLO1))
    assert "not only spec.app field was changed" in reason


def test_going_back_to_prevapp_while_the_branch_upgrades_is_its_rollback() -> None:
    """Mid-upgrade (upgradeInfo.prevApp = hello, cluster `updating`) Git going back to hello is switched at once,
    after hello-v2 (the app it leaves) is marked upgradable, and the pods go back to 1.0.0."""
    world = BranchCluster(branch_state(stored(HELLO1, upgradable=True), stored(HELLO_V2)))
    _run(world, desired(HELLO1, HELLO_V2, _on("hello-v2")))
    assert world.cluster(KEY).app == "hello-v2"
    back = _run(world, desired(HELLO1, HELLO_V2, HELLO_DEV))
    kinds = [type(a).__name__ for a in back]
    assert kinds[:3] == ["EnsureRollout", "MarkUpgradable", "SwitchApp"], kinds
    assert back[1].app == "hello-v2" and world.cluster(KEY).app == "hello"  # type: ignore[union-attr]
    assert world.cluster(KEY).rollout.app_version == "1.0.0"


def test_going_back_once_the_branch_finished_is_refused_as_not_newer() -> None:
    """KubeDirector dropped upgradeInfo (its upgrade finished, the cluster `configured`): the branch takes no older
    app, so `git revert` of the switch is a refused commit with its reason, and nothing is written."""
    world = BranchCluster(branch_state(stored(HELLO1, upgradable=True), stored(HELLO_V2, upgradable=True)))
    _run(world, desired(HELLO1, HELLO_V2, _on("hello-v2")))
    raw = thaw(world.cluster(KEY).raw)
    raw["status"] = {"state": "configured"}
    world.put(replace(world.cluster(KEY), raw=raw))
    result = plan(desired(HELLO1, HELLO_V2, HELLO_DEV), world.state, now=T0)
    assert [r.field for r in result.refusals] == ["spec.app"], result.refusals
    assert "The candidate app version 1.0.0 is not newer than version 2.0.0" in result.refusals[0].reason
    assert not [a for a in result.actions if not isinstance(a, A.Wait)], result.actions
