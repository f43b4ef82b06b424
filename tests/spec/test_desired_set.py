"""check_desired_set: cross-file checks over all apps and clusters of a commit."""

from __future__ import annotations

import copy
from typing import Any

from spec_factories import app_doc, cluster_doc, load

from gitops_kd.spec import KDApp, KDCluster, check_desired_set, find_app


def _app(path: str = "apps/kafka.yaml", namespace: str | None = None, **changes: Any) -> KDApp:
    doc = app_doc(**changes)
    if namespace:
        doc["metadata"]["namespace"] = namespace
    (app,) = load(path, doc)
    assert isinstance(app, KDApp)
    return app


def _cluster(path: str = "clusters/dev.yaml", namespace: str | None = None, **changes: Any) -> KDCluster:
    doc = cluster_doc(**changes)
    if namespace:
        doc["metadata"]["namespace"] = namespace
    (cluster,) = load(path, doc)
    assert isinstance(cluster, KDCluster)
    return cluster


def _pairs(apps: list[KDApp], clusters: list[KDCluster], **kw: Any) -> list[tuple[str, str, str]]:
    return [(e.file, e.field, e.reason) for e in check_desired_set(apps, clusters, **kw)]


def test_consistent_set_has_no_errors() -> None:
    assert check_desired_set([_app()], [_cluster()]) == []


def test_cluster_with_unknown_app() -> None:
    assert _pairs([_app()], [_cluster(app="zookeeper")]) == [
        (
            "clusters/dev.yaml",
            "spec.app",
            'unknown app "zookeeper": no KubeDirectorApp of that name in the default namespace of this repository (apps: kafka)',
        )
    ]


def test_cluster_role_not_in_app() -> None:
    roles = copy.deepcopy(cluster_doc()["spec"]["roles"])
    roles[1]["id"] = "zookeeper"
    assert _pairs([_app()], [_cluster(roles=roles)]) == [
        ("clusters/dev.yaml", "spec.roles[1].id", 'unknown role "zookeeper" for app "kafka" (roles: controller, broker)'),
        ("clusters/dev.yaml", "spec.roles", 'role "broker" of app "kafka" is active with cardinality "3+" and must be listed'),
    ]


def test_member_count_outside_cardinality() -> None:
    roles = copy.deepcopy(cluster_doc()["spec"]["roles"])
    roles[0]["members"] = 2
    roles[1]["members"] = 2
    assert _pairs([_app()], [_cluster(roles=roles)]) == [
        (
            "clusters/dev.yaml",
            "spec.roles[0].members",
            '2 members does not match cardinality "1" of role "controller" in app "kafka"',
        ),
        (
            "clusters/dev.yaml",
            "spec.roles[1].members",
            '2 members does not match cardinality "3+" of role "broker" in app "kafka"',
        ),
    ]
    roles[1]["members"] = 7
    del roles[0]["members"]  # absent: KubeDirector uses the cardinality minimum
    assert check_desired_set([_app()], [_cluster(roles=roles)]) == []


def test_duplicates() -> None:
    errors = _pairs([_app(), _app("apps/kafka-copy.yaml")], [_cluster(), _cluster("clusters/again.yaml")])
    assert errors == [
        ("apps/kafka-copy.yaml", "metadata.name", 'duplicate app "kafka" in the default namespace (also in apps/kafka.yaml)'),
        (
            "clusters/again.yaml",
            "metadata.name",
            'duplicate cluster "kafka-dev" in the default namespace (also in clusters/dev.yaml)',
        ),
    ]


def test_namespaces() -> None:
    team = _app(namespace="team")
    # same name in two namespaces is fine
    assert check_desired_set([_app(), team], []) == []
    # the default namespace, once known, makes an explicit and an implicit namespace the same
    assert len(check_desired_set([_app(), team], [], default_namespace="team")) == 1
    # a local-catalog cluster only sees apps in its own namespace
    local = _cluster(namespace="other", appCatalog="local")
    assert [e.field for e in check_desired_set([team], [local])] == ["spec.app"]
    assert find_app(_cluster(namespace="team"), [_app(), team]) is team
    # "system" (and unset, after the local namespace) look in KubeDirector's namespace
    system = _cluster(namespace="other", appCatalog="system")
    assert find_app(system, [team]) is team
    assert find_app(system, [team], system_namespace="kubedirector") is None
    assert find_app(_cluster(namespace="other"), [team], system_namespace="team") is team
