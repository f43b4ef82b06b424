"""The diff's identity memos: reused only for the very same inputs; a changed input is always re-diffed."""

from __future__ import annotations

from dataclasses import replace

from plan.kdworld import HELLO1, HELLO2, HELLO_DEV, NS, T0, desired, live_cluster, observed, set_cluster

from gitops_kd.diff import app_manifest, diff
from gitops_kd.diff.engine import frozen_app_manifest, memo_owned_template
from gitops_kd.diff.memo import IdentityMemo
from gitops_kd.observe import ObservedApp, ObservedState
from gitops_kd.plan import ApplyApp, ApplyCluster, EnsureRollout, PatchTemplate, plan
from gitops_kd.spec.freeze import thaw

APP = (NS, "hello")
DEV = (NS, "hello-dev")


class Box:
    """An object compared by value but distinct by identity (what a re-read or re-frozen input is)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Box) and other.value == self.value

    __hash__ = None  # type: ignore[assignment]


def test_identity_memo_hits_only_for_the_same_objects_and_extra() -> None:
    memo: IdentityMemo[int] = IdentityMemo("test")
    calls: list[int] = []

    def compute(box: Box, extra: str) -> int:
        return memo.get((box,), extra, lambda: calls.append(box.value) or box.value * 10)

    a = Box(1)
    assert compute(a, "x") == 10 and compute(a, "x") == 10
    assert calls == [1]
    assert compute(Box(1), "x") == 10 and calls == [1, 1]  # equal but another object: recomputed
    assert compute(a, "y") == 10 and calls == [1, 1, 1]  # other extra: recomputed
    assert (memo.hits, memo.misses) == (1, 3)


def test_identity_memo_forgets_entries_unused_for_a_round() -> None:
    memo: IdentityMemo[str] = IdentityMemo("test")
    used, unused = Box(1), Box(2)
    memo.get((used,), None, lambda: "u")
    memo.get((unused,), None, lambda: "n")
    memo.new_round()
    assert memo.get((used,), None, lambda: "recomputed") == "u"  # used in this round: kept
    memo.new_round()
    assert len(memo) == 1
    assert memo.get((unused,), None, lambda: "recomputed") == "recomputed"


def test_repeated_plan_of_the_same_states_is_identical() -> None:
    want, have = desired(HELLO2, HELLO_DEV), observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),))
    first = plan(want, have, now=T0)
    assert first.actions and first.actions == plan(want, have, now=T0).actions
    assert diff(want, have) == diff(want, have)


def test_a_live_app_edited_out_of_band_is_not_served_from_the_memo() -> None:
    want = desired(HELLO1, HELLO_DEV)
    have = observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),))
    assert plan(want, have, now=T0).empty
    live = have.apps[APP]
    raw = thaw(live.raw)
    raw["spec"]["defaultImageRepoTag"] = "evil:1"  # the digest annotation still matches
    edited = replace(have, apps={APP: ObservedApp(NS, "hello", live.version, live.upgrade, "2", raw)})
    again = plan(want, edited, now=T0)
    assert [type(a) for a in again.actions] == [ApplyApp]
    assert diff(want, edited).app(APP).changes  # the field change is reported too
    assert plan(want, have, now=T0).empty  # and the original objects still diff as in sync


def test_a_changed_desired_app_is_not_served_from_the_memo() -> None:
    have = observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),))
    assert plan(desired(HELLO1, HELLO_DEV), have, now=T0).empty
    bumped = plan(desired(HELLO2, HELLO_DEV), have, now=T0)  # the KDApp is held (in use): the rollout moves
    assert [a.target_version for a in bumped.actions if isinstance(a, EnsureRollout)] == ["2.0.0"]
    unused = observed((HELLO1,), ())
    assert plan(desired(HELLO1), unused, now=T0).empty
    apply = [a for a in plan(desired(HELLO2), unused, now=T0).actions if isinstance(a, ApplyApp)]
    assert [a.version for a in apply] == ["2.0.0"] and apply[0].body == app_manifest(HELLO2, APP)


def test_a_live_template_edit_and_a_cluster_spec_edit_are_not_served_from_the_memo() -> None:
    want = desired(HELLO1, HELLO_DEV)
    cluster = live_cluster(HELLO1, HELLO_DEV)
    have = observed((HELLO1,), (cluster,))
    assert plan(want, have, now=T0).empty
    sts = cluster.statefulsets["worker"]
    template = thaw(sts.template)
    template["spec"]["containers"][0]["image"] = "evil:1"
    drifted = set_cluster(
        have, replace(cluster, statefulsets={**cluster.statefulsets, "worker": replace(sts, template=template)})
    )
    patches = [a for a in plan(want, drifted, now=T0).actions if isinstance(a, PatchTemplate)]
    assert [(p.role, p.fields) for p in patches] == [("worker", ("spec.containers[app].image",))]
    raw = thaw(cluster.raw)
    raw["spec"]["roles"][1]["members"] = 5
    resized = set_cluster(have, replace(cluster, raw=raw))
    assert [type(a) for a in plan(want, resized, now=T0).actions] == [ApplyCluster]


def test_memoised_manifests_are_frozen_and_fresh_copies_are_handed_out() -> None:
    first = app_manifest(HELLO1, APP)
    first["spec"]["version"] = "mutated"
    first["metadata"]["annotations"].clear()
    assert app_manifest(HELLO1, APP)["spec"]["version"] == "1.0.0"
    assert frozen_app_manifest(HELLO1, APP) is frozen_app_manifest(HELLO1, APP)
    other_ns = app_manifest(HELLO1, ("other", "hello"))
    assert other_ns["metadata"]["namespace"] == "other"
    copy = HELLO1.cluster_manifest()
    copy["spec"]["roles"].clear()
    assert HELLO1.cluster_manifest()["spec"]["roles"]
    bumped = replace(HELLO1, frozen_body=HELLO2.frozen_body, version="2.0.0")  # equal name, new object
    assert frozen_app_manifest(bumped, APP)["spec"]["version"] == "2.0.0"
    assert frozen_app_manifest(HELLO1, APP)["spec"]["version"] == "1.0.0"


def test_owned_templates_are_memoised_per_inputs() -> None:
    a = memo_owned_template(HELLO1, HELLO_DEV, "worker", from_version="1.0.0", rules=None)
    assert memo_owned_template(HELLO1, HELLO_DEV, "worker", from_version="1.0.0", rules=None) is a
    other = memo_owned_template(HELLO1, HELLO_DEV, "worker", from_version="0.9.0", rules=None)
    assert other is not a and other != a
    assert memo_owned_template(HELLO2, HELLO_DEV, "worker", from_version="1.0.0", rules=None) != a
    assert memo_owned_template(HELLO1, HELLO_DEV, "controller", from_version="1.0.0", rules=None) != a


def test_equal_renderings_of_two_clusters_are_held_once() -> None:
    """Invariant (memory per cluster, bench/fleet_scale.py): the memos freeze their renderings through one table of
    shared values, so two clusters of one app hold one copy of what renders equal, not one each."""
    twin = replace(HELLO_DEV)  # equal content, another object: the memo misses and renders again
    a = memo_owned_template(HELLO1, HELLO_DEV, "worker", from_version="1.0.0", rules=None)
    b = memo_owned_template(HELLO1, twin, "worker", from_version="1.0.0", rules=None)
    assert b == a and b["spec"]["containers"] is a["spec"]["containers"]


def test_diff_report_lookups() -> None:
    report = diff(desired(HELLO1, HELLO_DEV), ObservedState({}, {}))
    assert report.app(APP).needs_apply and report.cluster(DEV) is not None and not report.cluster(DEV).exists
    assert report.app((NS, "missing")) is None and report.cluster((NS, "missing")) is None


def test_a_label_only_change_of_a_cluster_in_git_is_applied() -> None:
    import yaml

    from gitops_kd.spec import load_manifests

    doc = HELLO_DEV.body
    doc["metadata"].setdefault("labels", {})["team"] = "data"
    relabelled = load_manifests("clusters/hello-dev.yaml", yaml.safe_dump(doc).encode())[0]
    have = observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),))
    assert plan(desired(HELLO1, HELLO_DEV), have, now=T0).empty
    actions = plan(desired(HELLO1, relabelled), have, now=T0).actions
    assert [type(a) for a in actions] == [ApplyCluster]
    assert actions[0].manifest["metadata"]["labels"]["team"] == "data"
