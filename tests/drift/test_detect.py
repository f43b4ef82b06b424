"""detect(): owned fields of StatefulSets, member Services, the live KDApp and KDCluster; never an upgrade."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitops_kd.drift import SERVICE, STATEFULSET, IgnoreRules, detect, upgrade_in_progress
from gitops_kd.kd.layout import KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.spec.freeze import thaw

from .worlds import (
    HELLO1,
    HELLO_DEV,
    NS,
    app_container,
    cluster,
    desired,
    edit_raw,
    edit_service_ports,
    edit_sts,
    edit_template,
    set_cluster,
    steady,
)

D = desired(HELLO1, HELLO_DEV, commit="abc123")
KEY = (NS, "hello-dev")


def test_in_sync_is_no_drift() -> None:
    assert detect(D, steady()) == []


def test_image_edit_is_drift_with_expected_actual_and_commit() -> None:
    state = edit_template(steady(), "worker", lambda t: app_container(t).update(image="evil:9"))
    [drift] = detect(D, state)
    assert (drift.kind, drift.namespace, drift.name, drift.cluster, drift.commit) == (
        STATEFULSET,
        NS,
        "kdss-worker",
        "hello-dev",
        "abc123",
    )
    [change] = drift.fields
    assert change.path == "spec.template.spec.containers[app].image"
    assert (change.expected, change.actual) == ("gitops-kd/hello:1.0.0", "evil:9")
    assert "evil:9" in drift.describe() and "gitops-kd/hello:1.0.0" in drift.describe()


def test_env_resources_port_and_mount_edits_name_each_field() -> None:
    def edit(t: dict) -> None:
        init = next(c for c in t["spec"]["initContainers"] if c["name"] == "init")
        next(e for e in init["env"] if e["name"] == "GITOPS_KD_VERSION")["value"] = "0.9"
        app = app_container(t)
        app["resources"] = {"limits": {"cpu": "4"}}
        app["ports"] = [{"containerPort": 9090, "name": "hello-http"}]

    paths = detect(D, edit_template(steady(), "worker", edit))[0].paths
    assert paths == (
        "spec.template.spec.containers[app].ports[8080]",
        "spec.template.spec.containers[app].ports[9090]",
        "spec.template.spec.containers[app].resources",
        "spec.template.spec.initContainers[init].env[GITOPS_KD_VERSION]",
    )


def test_equal_quantities_and_unowned_fields_are_not_drift() -> None:
    def edit(t: dict) -> None:
        app = app_container(t)
        app["resources"]["requests"]["cpu"] = "0.1"  # == 100m
        app.setdefault("env", []).append({"name": "TEAM_SETTING", "value": "x"})  # not owned
        t["metadata"].setdefault("annotations", {})["kubectl.kubernetes.io/restartedAt"] = "now"

    assert detect(D, edit_template(steady(), "worker", edit)) == []


def test_update_strategy_back_to_rolling_update_is_drift() -> None:
    [drift] = detect(D, edit_sts(steady(), "controller", update_strategy="RollingUpdate"))
    assert drift.name == "kdss-controller"
    assert [(f.path, f.expected, f.actual) for f in drift.fields] == [("spec.updateStrategy.type", "OnDelete", "RollingUpdate")]


def test_replicas_are_kubedirectors_not_drift() -> None:
    assert detect(D, edit_sts(steady(), "worker", replicas=5)) == []


def test_service_port_edit_is_drift() -> None:
    state = edit_service_ports(steady(), "s-kdss-worker-1", [{"name": "http-hello-http", "port": 9999}])
    [drift] = detect(D, state)
    assert (drift.kind, drift.name) == (SERVICE, "s-kdss-worker-1")
    assert [(f.path, f.expected, f.actual) for f in drift.fields] == [("spec.ports[http-hello-http].port", 8080, 9999)]


def test_service_port_added_and_removed() -> None:
    state = edit_service_ports(
        steady(), "s-kdss-worker-0", [{"name": "http-hello-http", "port": 8080, "targetPort": 1}, {"name": "debug", "port": 5005}]
    )
    [drift] = detect(D, state)
    assert [(f.path, f.expected) for f in drift.fields] == [("spec.ports[debug]", None)]
    assert dict(drift.fields[0].actual) == {"name": "debug", "port": 5005}


def test_kdapp_and_kdcluster_spec_edits() -> None:
    state = edit_raw(steady(), lambda r: r["spec"]["roles"][1].update(members=3))
    state = edit_raw(state, lambda r: r["spec"].update(defaultImageRepoTag="other:1"), app=True)
    drifts = detect(D, state)
    assert [(d.kind, d.name, d.paths) for d in drifts] == [
        (KDAPP_KIND, "hello", ("spec.defaultImageRepoTag",)),
        (KDCLUSTER_KIND, "hello-dev", ("spec.roles[worker].members",)),
    ]
    assert drifts[1].fields[0].expected == 2 and drifts[1].fields[0].actual == 3


def test_server_defaults_on_kd_objects_are_not_drift() -> None:
    def add(r: dict) -> None:
        r["spec"]["roles"][0]["serviceAccountName"] = "default"  # a field Git does not write
        r["metadata"]["managedFields"] = [{"manager": "kubectl"}]
        r["metadata"].setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = "{}"

    assert detect(D, edit_raw(steady(), add)) == []


@pytest.mark.parametrize(
    "phase,target,app_version",
    [
        ("Upgrading", "1.0.0", "0.9.0"),
        ("Downgrading", "1.0.0", "1.1.0"),
        ("Stalled", "1.0.0", "0.9.0"),
        ("Idle", "0.9.0", "0.9.0"),  # EnsureRollout for the new target not done yet
    ],
)
def test_running_or_pending_upgrade_is_not_drift(phase: str, target: str, app_version: str) -> None:
    state = edit_template(steady(), "worker", lambda t: app_container(t).update(image="gitops-kd/hello:0.9.0"))
    state = edit_service_ports(state, "s-kdss-worker-0", [{"name": "http-hello-http", "port": 80}])
    c = cluster(state)
    state = set_cluster(
        state, replace(c, rollout=replace(c.rollout, phase=phase, target_version=target, app_version=app_version))
    )
    assert upgrade_in_progress(D, state, KEY)
    assert [d.kind for d in detect(D, state)] == []


def test_no_rollout_yet_is_convergence_not_drift() -> None:
    state = edit_sts(steady(), "worker", update_strategy="RollingUpdate")
    state = set_cluster(state, replace(cluster(state), rollout=None))
    assert detect(D, state) == []


def test_idle_rollout_at_target_is_drift_checked() -> None:
    assert not upgrade_in_progress(D, steady(), KEY)


def test_in_progress_callable_silences_a_cluster_and_its_app() -> None:
    state = edit_raw(steady(), lambda r: r["spec"].update(defaultImageRepoTag="other:1"), app=True)
    state = edit_sts(state, "worker", update_strategy="RollingUpdate")
    assert detect(D, state, in_progress=lambda key: key == KEY) == []
    assert [d.kind for d in detect(D, state, app_in_progress=lambda key: True)] == [STATEFULSET]


def test_ignore_rules_drop_fields() -> None:
    state = edit_template(steady(), "worker", lambda t: app_container(t).update(image="evil:9"))
    state = edit_sts(state, "worker", update_strategy="RollingUpdate")
    rules = IgnoreRules.from_dict({"ignore": {"StatefulSet": ["spec.template.spec.containers[*].image"]}})
    [drift] = detect(D, state, rules=rules)
    assert drift.paths == ("spec.updateStrategy.type",)
    regex = IgnoreRules.from_dict({"ignore": {"*": [r"regex:^spec\.updateStrategy"]}})
    assert detect(D, state, rules=regex)[0].paths == ("spec.template.spec.containers[app].image",)


def test_field_values_are_plain_json() -> None:
    state = edit_template(steady(), "worker", lambda t: app_container(t).update(resources={"limits": {"cpu": "4"}}))
    change = detect(D, state)[0].fields[0]
    assert change.as_json() == {
        "path": "spec.template.spec.containers[app].resources",
        "expected": thaw(change.expected),
        "actual": {"limits": {"cpu": "4"}},
    }
    assert change.as_json()["expected"]["limits"]["cpu"] == "500m"
