"""Prune (plan/prune.py): what gitops-kd applied and Git no longer has is reported, or deleted with --prune."""

from __future__ import annotations

from dataclasses import replace

from gitops_kd.observe import ObservedState
from gitops_kd.plan import Prune, plan
from gitops_kd.plan.prune import PRUNE_ANNOTATION
from gitops_kd.spec.freeze import thaw
from plan.kdworld import HELLO1, HELLO_DEV, NS, T0, desired, live_cluster, load_text, observed

KEY = (NS, "hello-dev")


def _other_app():
    body = thaw(HELLO1.body)
    body["metadata"]["name"] = "other"
    return load_text("apps/other.yaml", body)


OTHER = _other_app()


def _live() -> ObservedState:
    """hello-dev (using hello) and the apps hello and other, all applied by gitops-kd."""
    return observed((HELLO1, OTHER), (live_cluster(HELLO1, HELLO_DEV),))


def _annotate(state: ObservedState, key: tuple[str, str], annotations: dict, *, app: bool = False) -> ObservedState:
    objs = state.apps if app else state.clusters
    raw = thaw(objs[key].raw)
    raw["metadata"]["annotations"] = {**(raw["metadata"].get("annotations") or {}), **annotations}
    if app:
        return replace(state, apps={**state.apps, key: replace(state.apps[key], raw=raw)})
    return replace(state, clusters={**state.clusters, key: replace(state.clusters[key], raw=raw)})


def test_without_prune_an_object_removed_from_git_is_kept_and_reported() -> None:
    p = plan(desired(OTHER), _live(), now=T0)
    assert p.empty and p.actions == ()
    assert any("KubeDirectorCluster default/hello-dev: not in Git, kept (prune is off)" in k for k in p.kept)
    assert "note: KubeDirectorApp default/hello: not in Git, kept (prune is off)" in p.describe()


def test_prune_deletes_the_cluster_first_and_its_app_once_unused() -> None:
    live = _live()
    p = plan(desired(OTHER), live, now=T0, prune=True)
    assert p.actions == (Prune("KubeDirectorCluster", NS, "hello-dev", live.clusters[KEY].uid),)
    assert p.actions[0].cluster_key == KEY
    assert any("KubeDirectorApp default/hello: not in Git, kept while KDCluster default/hello-dev uses it" in k for k in p.kept)
    gone = replace(live, clusters={})
    [prune_app] = plan(desired(OTHER), gone, now=T0, prune=True).actions
    assert isinstance(prune_app, Prune) and prune_app.kind == "KubeDirectorApp" and prune_app.name == "hello"
    assert prune_app.cluster_key is None


def test_prune_leaves_objects_gitops_kd_did_not_apply_or_that_opt_out() -> None:
    live = _live()
    raw = thaw(live.clusters[KEY].raw)
    raw["metadata"]["annotations"] = {}
    by_hand = replace(live, clusters={KEY: replace(live.clusters[KEY], raw=raw)})
    assert [a.name for a in plan(desired(OTHER), by_hand, now=T0, prune=True).actions] == []
    opted = _annotate(live, KEY, {PRUNE_ANNOTATION: "disabled"})
    p = plan(desired(OTHER), opted, now=T0, prune=True)
    assert p.actions == () and any("kept (gitops-kd.io/prune: disabled)" in k for k in p.kept)


def test_a_cluster_being_deleted_is_not_deleted_again() -> None:
    deleting = _annotate(_live(), KEY, {})
    raw = thaw(deleting.clusters[KEY].raw)
    raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    deleting = replace(deleting, clusters={KEY: replace(deleting.clusters[KEY], raw=raw)})
    assert plan(desired(OTHER), deleting, now=T0, prune=True).actions == ()


def test_an_empty_desired_state_never_prunes() -> None:
    p = plan(desired(), _live(), now=T0, prune=True)
    assert p.refused and p.actions == ()
    assert "refusing to prune the 3 object(s) gitops-kd applied" in p.describe()
    assert not plan(desired(), _live(), now=T0).refused  # without --prune there is nothing to refuse


def test_objects_in_git_are_never_pruned() -> None:
    assert plan(desired(HELLO1, OTHER, HELLO_DEV), _live(), now=T0, prune=True).empty
