"""KubeDirector's persisted-dir rule, directly and as applied to loaded apps."""

from __future__ import annotations

import pytest
from spec_factories import app_doc, load

from gitops_kd.spec import KDApp, effective_persist_dirs


@pytest.mark.parametrize(
    ("defaults", "app_dirs", "expected"),
    [
        (["/etc"], None, ("/etc",)),
        (["/etc"], ["/var/lib/x", "/home"], ("/etc", "/var/lib/x", "/home")),
        (["/etc"], ["/etc/hadoop", "/home"], ("/etc", "/home")),  # covered by a default
        (["/etc"], ["/etc"], ("/etc",)),  # duplicate of a default
        (["/etc"], ["/var", "/var/log"], ("/etc", "/var")),  # covered by another app dir
        (["/etc"], ["/home", "/home"], ("/etc", "/home")),  # repeated app dir
        (["/etc", "/opt", "/usr"], ["/opt/configscripts", "/var/log"], ("/etc", "/opt", "/usr", "/var/log")),
        (["/etc", "/opt/guestconfig"], ["/opt"], ("/etc", "/opt")),  # a default below an app dir goes
        (["/etc"], ["/etcd"], ("/etc", "/etcd")),  # a prefix is not a parent
    ],
)
def test_rule(defaults: list[str], app_dirs: list[str] | None, expected: tuple[str, ...]) -> None:
    assert effective_persist_dirs(defaults, app_dirs) == expected


def _app(**changes: object) -> KDApp:
    (app,) = load("apps/kafka.yaml", app_doc(**changes))
    assert isinstance(app, KDApp)
    return app


def test_role_dirs_replace_app_defaults() -> None:
    app = _app()
    assert app.role("controller").persist_dirs is None
    assert app.role("controller").effective_persist_dirs == ("/etc", "/var/lib/kafka")
    assert app.role("broker").persist_dirs == ("/var/lib/kafka", "/opt/kafka/conf")
    assert app.role("broker").effective_persist_dirs == ("/etc", "/var/lib/kafka", "/opt/kafka/conf")
    assert app.persisted_dirs == ("/etc", "/var/lib/kafka", "/opt/kafka/conf")


def test_config_package_layouts() -> None:
    legacy = _app(defaultConfigPackage={"packageURL": "file:///opt/x.tgz"})
    assert legacy.role("controller").effective_persist_dirs == ("/etc", "/opt", "/usr", "/var/lib/kafka")
    assert legacy.role("broker").effective_persist_dirs == ("/etc", "/opt", "/usr", "/var/lib/kafka")
    new = _app(defaultConfigPackage={"packageURL": "file:///opt/x.tgz", "useNewSetupLayout": True})
    assert new.role("controller").effective_persist_dirs == (
        "/etc",
        "/opt/guestconfig",
        "/var/log/guestconfig",
        "/usr/local/bin",
        "/usr/local/lib",
        "/var/lib/kafka",
    )
    # a role's explicit null configPackage opts out of the app's default package
    doc_roles = [{"id": "controller", "cardinality": "1", "configPackage": None}, {"id": "broker", "cardinality": "3+"}]
    mixed = _app(defaultConfigPackage={"packageURL": "file:///opt/x.tgz"}, roles=doc_roles)
    assert mixed.role("controller").effective_persist_dirs == ("/etc", "/var/lib/kafka")
    assert mixed.role("controller").config_package is None
    assert mixed.role("broker").config_package is not None
