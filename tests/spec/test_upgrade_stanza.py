"""The spec.upgrade stanza: schema refusals, semantic checks, rule lookups and the annotation round trip."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from spec_factories import UPGRADE, app_doc, dump, load, refusals

from gitops_kd.spec import UPGRADE_ANNOTATION, DirAction, FieldError, KDApp, SpecError, UpgradeSpec


def _app(upgrade: dict[str, Any], version: str = "2.0") -> KDApp:
    (app,) = load("apps/kafka.yaml", app_doc(version=version, upgrade=upgrade))
    assert isinstance(app, KDApp)
    return app


def _errors(upgrade: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.field, e.reason) for e in refusals("apps/x.yaml", dump(app_doc(upgrade=upgrade)))]


def _with(path: str, value: Any) -> dict[str, Any]:
    """UPGRADE with one dotted key set (e.g. "gate.periodSecond")."""
    up = copy.deepcopy(UPGRADE)
    node = up
    *parents, last = path.split(".")
    for p in parents:
        node = node[int(p)] if p.isdigit() else node[p]
    node[last] = value
    return up


def test_full_stanza_model() -> None:
    up = _app(UPGRADE).upgrade
    assert up is not None
    assert up.role_order == ("broker",)
    assert up.failure_policy == "halt" and up.pod_ready_timeout_seconds == 120
    first = up.upgrade_from[0]
    assert first.persist_dirs["/opt/kafka/conf"] == DirAction("discard")
    migrate = first.persist_dirs["/var/lib/kafka"]
    assert migrate.action == "migrate" and migrate.migrate is not None
    assert migrate.migrate.command == ("/bin/sh", "-c", "true") and migrate.migrate.timeout_seconds == 30
    assert up.post_upgrade is not None and up.post_upgrade.applies_to("broker")
    assert not up.post_upgrade.applies_to("controller")
    assert up.post_upgrade.timeout_seconds == 300  # default
    assert up.gate is not None and up.gate.exec_command == ("/bin/true",) and up.gate.http_get is None
    assert up.gate.applies_to("controller")


def test_defaults_for_an_empty_stanza() -> None:
    up = _app({}).upgrade
    assert up == UpgradeSpec()
    assert up.rule_for_upgrade_from("1.0.0") is None  # no from[]: every upgrade is refused
    assert up.downgrade_to is None and up.rule_for_downgrade_to("1.0.0") is None


def test_rule_lookup_first_match_wins() -> None:
    up = _app(UPGRADE).upgrade
    assert up is not None
    rule = up.rule_for_upgrade_from("1.5")
    assert rule is up.upgrade_from[0]
    assert up.rule_for_upgrade_from("0.3.1") is up.upgrade_from[1]
    assert up.rule_for_upgrade_from("2.0.0") is None
    assert up.rule_for_downgrade_to("1.9.9") is up.downgrade_to[0]  # type: ignore[index]
    assert up.rule_for_downgrade_to("0.9.0") is None


def test_action_for_dirs() -> None:
    up = _app(UPGRADE).upgrade
    assert up is not None
    rule = up.upgrade_from[0]
    assert rule.action_for("/var/lib/kafka").action == "migrate"
    assert rule.action_for("/var/lib/kafka/data").action == "migrate"  # inside a listed dir
    assert rule.action_for("/etc").action == "keep"  # not listed: default
    assert rule.action_for("/etc/kafka").action == "keep"
    assert rule.actions_within("/etc") == (("/etc/kafka", DirAction("keep")),)
    assert up.upgrade_from[1].action_for("/etc").action == "discard"  # that rule's default


def test_ordered_roles() -> None:
    app = _app(UPGRADE)
    assert app.upgrade is not None
    assert app.upgrade.ordered_roles(app) == ("broker", "controller")
    assert _app({"roleOrder": ["controller", "broker"]}).role_ids == ("controller", "broker")
    assert UpgradeSpec().ordered_roles(app) == ("controller", "broker")


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("gate.periodSecond", 5, [("spec.upgrade.gate.periodSecond", 'unknown field "periodSecond"')]),
        ("hooks.preUpgrade", {}, [("spec.upgrade.hooks.preUpgrade", 'unknown field "preUpgrade"')]),
        (
            "from.0.persistDirs./etc/kafka",
            "delete",
            [("spec.upgrade.from[0].persistDirs[/etc/kafka]", 'must be one of keep | discard | migrate, not "delete"')],
        ),
        (
            "downgrade.to.0.persistDirs./var/lib/kafka",
            "migrate",
            [
                (
                    "spec.upgrade.downgrade.to[0].persistDirs[/var/lib/kafka]",
                    'must be one of keep | discard | restore, not "migrate"',
                )
            ],
        ),
        (
            "from.0.persistDirs./var/lib/kafka",
            {"migrate": {"cmd": ["x"]}},
            [
                ("spec.upgrade.from[0].persistDirs[/var/lib/kafka].migrate.cmd", 'unknown field "cmd"'),
                ("spec.upgrade.from[0].persistDirs[/var/lib/kafka].migrate.command", "required field is missing"),
            ],
        ),
        ("failurePolicy", "retry", [("spec.upgrade.failurePolicy", 'must be one of halt | revert-commit, not "retry"')]),
        ("podReadyTimeoutSeconds", 0, [("spec.upgrade.podReadyTimeoutSeconds", "must be at least 1, not 0")]),
        ("gate.timeoutSeconds", "10", [("spec.upgrade.gate.timeoutSeconds", "must be an integer, not a string")]),
        (
            "from.0.versions",
            ">=1.0.0 <<2",
            [
                (
                    "spec.upgrade.from[0].versions",
                    'bad version range: ">=1.0.0 <<2": cannot parse "<<2": expected a comparator (>=, >, <, <=, =) followed '
                    'by a version, "1.x", "^1.2.0", "~1.2.0", "*", or an exact version "1.2.3"',
                )
            ],
        ),
        (
            "roleOrder",
            ["broker", "zookeeper"],
            [("spec.upgrade.roleOrder[1]", 'unknown role "zookeeper" (roles: controller, broker)')],
        ),
        (
            "roleOrder",
            ["broker", "broker"],
            [("spec.upgrade.roleOrder[1]", 'role "broker" listed twice (also at spec.upgrade.roleOrder[0])')],
        ),
        (
            "hooks.postUpgrade.roles",
            ["nope"],
            [("spec.upgrade.hooks.postUpgrade.roles[0]", 'unknown role "nope" (roles: controller, broker)')],
        ),
        (
            "gate.httpGet",
            {"port": 8080},
            [("spec.upgrade.gate", "exactly one of exec, httpGet or tcpSocket is required, not both")],
        ),
        (
            "from.0.persistDirs./srv/data",
            "keep",
            [
                (
                    "spec.upgrade.from[0].persistDirs[/srv/data]",
                    "not a persisted dir of any role, nor inside one (persisted: /etc, /opt/kafka/conf, /var/lib/kafka)",
                )
            ],
        ),
        (
            "from.0.persistDirs./var/lib/",
            "keep",
            [
                (
                    "spec.upgrade.from[0].persistDirs[/var/lib/]",
                    "must be an absolute, normalized directory path (no trailing /, no . or ..)",
                )
            ],
        ),
    ],
)
def test_refusals(path: str, value: Any, expected: list[tuple[str, str]]) -> None:
    assert _errors(_with(path, value)) == expected


def test_all_stanza_errors_are_reported_together() -> None:
    up = _with("gate.periodSecond", 5)
    up["roleOrder"] = ["zookeeper"]
    up["from"][0]["versions"] = "nope"
    fields = [f for f, _ in _errors(up)]
    assert fields == ["spec.upgrade.gate.periodSecond", "spec.upgrade.roleOrder[0]", "spec.upgrade.from[0].versions"]


def test_gate_needs_exec_or_http() -> None:
    up = copy.deepcopy(UPGRADE)
    up["gate"] = {"periodSeconds": 3}
    assert _errors(up) == [("spec.upgrade.gate", "exactly one of exec, httpGet or tcpSocket is required")]
    up["gate"] = {"httpGet": {"port": 8080, "path": "/ok", "scheme": "HTTPS"}}
    gate = _app(up).upgrade.gate  # type: ignore[union-attr]
    assert gate is not None and gate.http_get is not None
    assert (gate.http_get.path, gate.http_get.port, gate.http_get.scheme) == ("/ok", 8080, "HTTPS")


def test_gate_with_a_tcp_socket_probe() -> None:
    """A tcpSocket gate (as Kubernetes' tcpSocket probe) parses to its port, is described for a reviewer, and a
    bad port or an unknown field is refused naming the field, like the other probe kinds."""
    up = copy.deepcopy(UPGRADE)
    up["gate"] = {"tcpSocket": {"port": 9042}, "periodSeconds": 3}
    gate = _app(up).upgrade.gate  # type: ignore[union-attr]
    assert gate is not None and (gate.probe.how, gate.probe.describe("<pod>")) == ("TCP socket", "TCP connect <pod>:9042")
    assert gate.exec_command is None and gate.http_get is None
    up["gate"] = {"tcpSocket": {"port": 0, "host": "x"}}
    assert _errors(up) == [
        ("spec.upgrade.gate.tcpSocket.host", 'unknown field "host"'),
        ("spec.upgrade.gate.tcpSocket.port", "must be at least 1, not 0"),
    ]
    up["gate"] = {"tcpSocket": {"port": 1}, "httpGet": {"port": 2}, "exec": {"command": ["true"]}}
    assert _errors(up) == [("spec.upgrade.gate", "exactly one of exec, httpGet or tcpSocket is required, not 3")]


def test_stanza_must_be_a_map() -> None:
    assert _errors(["x"]) == [("spec.upgrade", "must be a map, not a list")]  # type: ignore[arg-type]


def test_cluster_manifest_round_trips_the_stanza() -> None:
    app = _app(UPGRADE)
    manifest = app.cluster_manifest()
    assert "upgrade" not in manifest["spec"]
    text = manifest["metadata"]["annotations"][UPGRADE_ANNOTATION]
    assert json.loads(text) == UPGRADE
    assert text == json.dumps(UPGRADE, separators=(",", ":"), sort_keys=True)  # compact, canonical
    back = UpgradeSpec.from_annotation(text)
    assert back == app.upgrade
    assert back.ordered_roles(app) == ("broker", "controller")
    assert back.rule_for_upgrade_from("1.0") == app.upgrade.rule_for_upgrade_from("1.0")  # type: ignore[union-attr]
    # everything else is the body as written
    body = app.body
    del body["spec"]["upgrade"]
    del manifest["metadata"]["annotations"]
    assert manifest == body


def test_cluster_manifest_without_stanza_has_no_annotation() -> None:
    (app,) = load("apps/kafka.yaml", app_doc())
    assert isinstance(app, KDApp)
    assert app.cluster_manifest() == app.body
    assert "annotations" not in app.cluster_manifest()["metadata"]


def test_from_annotation_refuses_bad_text() -> None:
    with pytest.raises(SpecError) as info:
        UpgradeSpec.from_annotation('{"gate": {"periodSecond": 1}}', source="ns/kafka")
    assert info.value.errors == (
        FieldError("ns/kafka", "gate.periodSecond", 'unknown field "periodSecond"'),
        FieldError("ns/kafka", "gate", "exactly one of exec, httpGet or tcpSocket is required"),
    )
    with pytest.raises(SpecError, match="invalid JSON"):
        UpgradeSpec.from_annotation("{nope")
