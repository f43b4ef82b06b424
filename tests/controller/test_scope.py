"""Scope (controller/scope.py): the desired state and plan a shard works on, as pure functions."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from gitops_kd.controller.scope import Scope, restrict, shard_lease_name
from gitops_kd.observed import ObservedState
from gitops_kd.plan.actions import ApplyApp, ApplyCluster
from gitops_kd.plan.planner import plan
from gitops_kd.spec import KDApp, KDCluster, load_manifests
from gitops_kd.spec.state import DesiredState

TEMPLATE = Path(__file__).resolve().parents[2] / "repo-template"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _doc(rel: str, namespace: str) -> dict[str, Any]:
    doc = yaml.safe_load((TEMPLATE / rel).read_text())
    doc["metadata"]["namespace"] = namespace
    return doc


def _load(kind_dir: str, rel: str, namespace: str) -> KDApp | KDCluster:
    path = f"{kind_dir}/{namespace}/{Path(rel).name}"
    [obj] = load_manifests(path, yaml.safe_dump(_doc(rel, namespace)).encode())
    return obj


def _desired(*objs: KDApp | KDCluster) -> DesiredState:
    return DesiredState(
        "c" * 40,
        apps={(o.namespace, o.name): o for o in objs if isinstance(o, KDApp)},
        clusters={(o.namespace, o.name): o for o in objs if isinstance(o, KDCluster)},
    )


def _app(ns: str) -> KDApp:
    return _load("apps", "apps/hello.yaml", ns)  # type: ignore[return-value]


def _cluster(ns: str) -> KDCluster:
    return _load("clusters", "clusters/hello-dev.yaml", ns)  # type: ignore[return-value]


TWO_TEAMS = _desired(_app("team-a"), _cluster("team-a"), _app("team-b"), _cluster("team-b"))


def test_a_shard_keeps_its_namespaces_and_names_each_skipped_file() -> None:
    scoped = restrict(TWO_TEAMS, Scope.of(["team-a"]))
    assert set(scoped.desired.apps) == {("team-a", "hello")}
    assert set(scoped.desired.clusters) == {("team-a", "hello-dev")}
    assert scoped.desired.commit == TWO_TEAMS.commit
    assert [(o.kind, o.namespace, o.file) for o in scoped.outside] == [
        ("KubeDirectorApp", "team-b", "apps/team-b/hello.yaml"),
        ("KubeDirectorCluster", "team-b", "clusters/team-b/hello-dev.yaml"),
    ]
    assert not scoped.borrowed
    line = scoped.log_line()
    assert line is not None and "\n" not in line
    assert "apps/team-b/hello.yaml (team-b)" in line and "clusters/team-b/hello-dev.yaml (team-b)" in line
    assert "namespace team-a" in line


def test_every_namespace_and_a_scope_holding_everything_change_nothing() -> None:
    for scope in (Scope.of(None), Scope.of({"team-a", "team-b", "team-c"})):
        scoped = restrict(TWO_TEAMS, scope)
        assert scoped.desired is TWO_TEAMS and scoped.outside == () and scoped.log_line() is None
    assert Scope.of("team-a").namespaces == frozenset({"team-a"})
    assert "team-b" not in Scope.of("team-a") and "anything" in Scope.of(None)


def test_the_plan_of_a_shard_applies_only_its_namespace_and_notes_the_rest() -> None:
    scoped = restrict(TWO_TEAMS, Scope.of(["team-a"]))
    result = scoped.restrict_plan(plan(scoped.desired, ObservedState(), now=NOW))
    applied = {(type(a).__name__, a.namespace, a.name) for a in result.actions if isinstance(a, (ApplyApp, ApplyCluster))}
    assert applied == {("ApplyApp", "team-a", "hello"), ("ApplyCluster", "team-a", "hello-dev")}
    text = result.describe()
    assert "note: KubeDirectorApp team-b/hello (apps/team-b/hello.yaml): namespace team-b is outside" in text
    assert "note: KubeDirectorCluster team-b/hello-dev (clusters/team-b/hello-dev.yaml)" in text


def test_an_app_outside_the_scope_is_read_for_its_cluster_but_never_applied() -> None:
    desired = _desired(_app("shared"), _cluster("team-a"))
    scoped = restrict(desired, Scope.of(["team-a"]))
    assert set(scoped.desired.clusters) == {("team-a", "hello-dev")}
    assert set(scoped.desired.apps) == {("shared", "hello")}, "the cluster still finds its app"
    assert scoped.borrowed == {("shared", "hello")}
    full = plan(scoped.desired, ObservedState(), now=NOW)
    assert any(isinstance(a, ApplyApp) for a in full.actions)
    result = scoped.restrict_plan(full)
    assert not any(isinstance(a, ApplyApp) for a in result.actions)
    assert any(isinstance(a, ApplyCluster) and a.namespace == "team-a" for a in result.actions)
    assert any("read as the app of KDCluster team-a/hello-dev but not applied" in k for k in result.kept)


def test_shard_lease_names_are_stable_and_distinct() -> None:
    a = shard_lease_name(["team-a", "team-c"])
    assert a == shard_lease_name(["team-c", "team-a", "team-a"]), "order and repeats do not matter"
    assert a != shard_lease_name(["team-b"])
    assert a.startswith("gitops-kd-") and len(a) <= 63
