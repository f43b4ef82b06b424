"""The repo-template loads with the spec loader, alone and with the example upgrade in place."""

from __future__ import annotations

from pathlib import Path

from gitops_kd.spec import KDApp, KDCluster, check_desired_set, load_manifests

TEMPLATE = Path(__file__).resolve().parents[2] / "repo-template"


def _load(rel: str) -> list[KDApp | KDCluster]:
    return load_manifests(rel, (TEMPLATE / rel).read_bytes())


def _manifests(folder: str) -> list[str]:
    return sorted(str(p.relative_to(TEMPLATE)) for p in (TEMPLATE / folder).rglob("*") if p.suffix in (".yaml", ".yml", ".json"))


def _split(objs: list[KDApp | KDCluster]) -> tuple[list[KDApp], list[KDCluster]]:
    return [o for o in objs if isinstance(o, KDApp)], [o for o in objs if isinstance(o, KDCluster)]


def test_layout() -> None:
    assert (TEMPLATE / "README.md").is_file()
    assert _manifests("apps") == ["apps/hello.yaml"]
    assert _manifests("clusters") == ["clusters/hello-dev.yaml"]
    assert _manifests("examples") == ["examples/hello-2.0.0.yaml"]
    top_level = [p.name for p in TEMPLATE.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml", ".json")]
    assert top_level == []


def test_apps_and_clusters_form_a_valid_set() -> None:
    apps, clusters = _split([o for rel in _manifests("apps") + _manifests("clusters") for o in _load(rel)])
    assert check_desired_set(apps, clusters) == []
    (hello,) = apps
    assert (hello.name, hello.version, hello.default_image) == ("hello", "1.0.0", "gitops-kd/hello:1.0.0")
    assert hello.role_ids == ("controller", "worker")
    assert (hello.role("controller").cardinality, hello.role("worker").cardinality) == ("1", "1+")
    assert hello.role("worker").service_ids == ("hello-http",)
    assert hello.service("hello-http").port == 8080
    assert hello.upgrade is None
    (dev,) = clusters
    assert (dev.name, dev.app, dev.namespace) == ("hello-dev", "hello", None)


def test_example_upgrade_replaces_the_app() -> None:
    (v2,) = _load("examples/hello-2.0.0.yaml")
    assert isinstance(v2, KDApp)
    clusters = [o for rel in _manifests("clusters") for o in _load(rel) if isinstance(o, KDCluster)]
    assert check_desired_set([v2], clusters) == []
    (v1,) = _load("apps/hello.yaml")
    assert isinstance(v1, KDApp)
    assert (v2.name, v2.distro_id) == (v1.name, v1.distro_id)
    assert v2.semver > v1.semver
    assert v2.default_image == "gitops-kd/hello:2.0.0"
    assert v2.service("hello-http").port == 8081
    up = v2.upgrade
    assert up is not None
    assert up.ordered_roles(v2) == ("controller", "worker")
    rule = up.rule_for_upgrade_from(v1.semver)
    assert rule is not None
    assert {d: rule.action_for(d).action for d in v2.persisted_dirs} == {
        "/etc": "keep",
        "/opt/hello/cache": "discard",
        "/var/lib/hello": "migrate",
    }
    assert up.post_upgrade is not None and "upgraded-to-2.0.0" in " ".join(up.post_upgrade.command)
    assert up.gate is not None and up.gate.exec_command is not None
    back = up.rule_for_downgrade_to(v1.version)
    assert back is not None and back.action_for("/var/lib/hello").action == "restore"
