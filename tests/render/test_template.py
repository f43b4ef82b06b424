"""owned_template / template_patch / owned_differences against StatefulSets as KubeDirector renders them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops_kd.render import (
    APP_VERSION_ANNOTATION,
    INIT_SCRIPT,
    owned_differences,
    owned_fields_equal,
    owned_template,
    service_ports,
    template_patch,
)
from gitops_kd.render.quantity import quantities_equal, resources_equal
from gitops_kd.spec import KDApp, KDCluster, load_manifests
from kdsim.kubedirector.model import parse_app, parse_cluster
from kdsim.kubedirector.render import render_member_service, render_statefulset
from kdsim.patch import strategic_merge
from kdsim.patch.schemas import schema_for

REPO = Path(__file__).resolve().parents[2] / "repo-template"


def load(rel: str) -> Any:
    return load_manifests(rel, (REPO / rel).read_bytes())[0]


APP1: KDApp = load("apps/hello.yaml")
APP2: KDApp = load("examples/hello-2.0.0.yaml")
CLUSTER: KDCluster = load("clusters/hello-dev.yaml")


def kd_statefulset(app: KDApp, cluster: KDCluster, role: str) -> dict[str, Any]:
    """The StatefulSet KubeDirector (the embedded cluster's renderer) makes for the role."""
    sim_app = parse_app({**app.body, "metadata": {"name": app.name, "namespace": "default"}})
    cdoc = cluster.body
    cdoc["metadata"] = {"name": cluster.name, "namespace": "default", "uid": "uid-1"}
    sim_cluster = parse_cluster(cdoc, sim_app)
    return render_statefulset(sim_cluster, sim_app, sim_cluster.role(role), cluster_service="kdhs-x", name="kdss-w")


def apply(template: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Apply a spec.template patch as the apiserver does for a StatefulSet."""
    sts = {"spec": {"template": copy.deepcopy(template)}}
    return strategic_merge(sts, {"spec": {"template": patch}}, schema_for("StatefulSet"))["spec"]["template"]


def container(template: dict[str, Any], name: str, kind: str = "containers") -> dict[str, Any]:
    return next(c for c in template["spec"][kind] if c["name"] == name)


def test_owned_template_for_a_role_with_storage() -> None:
    rules = APP2.upgrade.rule_for_upgrade_from(APP1.version)
    owned = owned_template(APP2, CLUSTER, "worker", from_version="1.0.0", rules=rules)
    assert owned["metadata"]["annotations"] == {APP_VERSION_ANNOTATION: "2.0.0"}
    app_c = container(owned, "app")
    assert app_c["image"] == "gitops-kd/hello:2.0.0"
    assert app_c["ports"] == [{"containerPort": 8081, "name": "hello-http"}]
    assert app_c["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}
    assert [(m["mountPath"], m["subPath"]) for m in app_c["volumeMounts"]] == [
        ("/etc", "etc"),
        ("/var/lib/hello", "var/lib/hello"),
        ("/opt/hello/cache", "opt/hello/cache"),
        ("/var/lib/gitops-kd", ".gitops-kd"),
    ]
    init = container(owned, "init", "initContainers")
    assert init["image"] == "gitops-kd/hello:2.0.0"
    assert init["command"] == ["/bin/sh"] and init["args"] == ["-c", INIT_SCRIPT]
    assert {e["name"]: e["value"] for e in init["env"]} == {
        "GITOPS_KD_VERSION": "2.0.0",
        "GITOPS_KD_FROM_VERSION": "1.0.0",
        "GITOPS_KD_DIRS": "keep=/etc discard=/opt/hello/cache migrate=/var/lib/hello",
    }


def test_owned_template_without_rules_keeps_every_dir() -> None:
    owned = owned_template(APP1, CLUSTER, "controller", from_version=None, rules=None)
    env = {e["name"]: e["value"] for e in container(owned, "init", "initContainers")["env"]}
    assert env["GITOPS_KD_DIRS"] == "keep=/etc keep=/opt/hello/cache keep=/var/lib/hello"
    assert env["GITOPS_KD_FROM_VERSION"] == ""
    assert container(owned, "app")["ports"] == []  # the controller exposes no service


def test_role_without_storage_has_no_init_container_and_no_pvc_mounts() -> None:
    body = CLUSTER.body
    for role in body["spec"]["roles"]:
        role.pop("storage")
    cluster = load_manifests("clusters/x.yaml", yaml.safe_dump(body).encode())[0]
    owned = owned_template(APP1, cluster, "worker", from_version=None, rules=None)
    assert "initContainers" not in owned["spec"]
    assert "volumeMounts" not in container(owned, "app")
    live = kd_statefulset(APP1, cluster, "worker")["spec"]["template"]
    assert owned_differences(live, owned) == ("metadata.annotations[gitops-kd.io/app-version]",)


def test_patch_takes_over_a_kubedirector_template_and_keeps_the_rest() -> None:
    live = kd_statefulset(APP1, CLUSTER, "worker")["spec"]["template"]
    owned = owned_template(APP1, CLUSTER, "worker", from_version=None, rules=None)
    diffs = owned_differences(live, owned)
    assert "spec.containers[app].volumeMounts[/var/lib/gitops-kd]" in diffs
    assert "spec.initContainers[init].args" in diffs
    assert "spec.containers[app].image" not in diffs  # KD already runs the 1.0.0 image
    after = apply(live, template_patch(live, owned))
    assert owned_fields_equal(after, owned)
    assert template_patch(after, owned) is None
    # KubeDirector's own parts are preserved
    app_c, kd_app_c = container(after, "app"), container(live, "app")
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"} in app_c["env"]
    assert [m for m in app_c["volumeMounts"] if m["name"] != "p"] == [m for m in kd_app_c["volumeMounts"] if m["name"] != "p"]
    assert after["spec"]["volumes"] == live["spec"]["volumes"]
    assert after["metadata"]["labels"] == live["metadata"]["labels"]
    assert container(after, "init", "initContainers")["volumeMounts"] == [{"name": "p", "mountPath": "/mnt"}]


def test_version_bump_patch_replaces_image_ports_and_env() -> None:
    live = kd_statefulset(APP1, CLUSTER, "worker")["spec"]["template"]
    live = apply(live, template_patch(live, owned_template(APP1, CLUSTER, "worker", from_version=None, rules=None)))
    owned = owned_template(APP2, CLUSTER, "worker", from_version="1.0.0", rules=APP2.upgrade.rule_for_upgrade_from("1.0.0"))
    diffs = owned_differences(live, owned)
    assert set(diffs) == {
        "metadata.annotations[gitops-kd.io/app-version]",
        "spec.initContainers[init].image",
        "spec.initContainers[init].env[GITOPS_KD_VERSION]",
        "spec.initContainers[init].env[GITOPS_KD_FROM_VERSION]",
        "spec.initContainers[init].env[GITOPS_KD_DIRS]",
        "spec.containers[app].image",
        "spec.containers[app].ports[8081]",
        "spec.containers[app].ports[8080]",
    }
    after = apply(live, template_patch(live, owned))
    assert container(after, "app")["ports"] == [{"containerPort": 8081, "name": "hello-http"}]
    assert owned_fields_equal(after, owned) and not owned_fields_equal(live, owned)


def test_removed_persisted_dir_mount_and_changed_resources_are_patched() -> None:
    live = kd_statefulset(APP1, CLUSTER, "worker")["spec"]["template"]
    body = APP2.body
    body["spec"]["defaultPersistDirs"] = ["/var/lib/hello"]
    del body["spec"]["upgrade"]
    app = load_manifests("apps/hello.yaml", yaml.safe_dump(body).encode())[0]
    cbody = CLUSTER.body
    cbody["spec"]["roles"][1]["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}
    cluster = load_manifests("clusters/hello-dev.yaml", yaml.safe_dump(cbody).encode())[0]
    owned = owned_template(app, cluster, "worker", from_version="1.0.0", rules=None)
    diffs = owned_differences(live, owned)
    assert "spec.containers[app].volumeMounts[/opt/hello/cache]" in diffs
    assert "spec.containers[app].resources" in diffs
    after = apply(live, template_patch(live, owned))
    paths = [m["mountPath"] for m in container(after, "app")["volumeMounts"] if m["name"] == "p"]
    assert paths == ["/etc", "/var/lib/hello", "/var/lib/gitops-kd"]
    assert container(after, "app")["resources"] == {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"cpu": "2", "memory": "1Gi"},
    }
    assert owned_fields_equal(after, owned)


def test_apiserver_defaults_and_quantity_spelling_are_not_drift() -> None:
    live = kd_statefulset(APP2, CLUSTER, "worker")["spec"]["template"]
    owned = owned_template(APP2, CLUSTER, "worker", from_version="1.0.0", rules=None)
    live = apply(live, template_patch(live, owned))
    app_c = container(live, "app")
    for port in app_c["ports"]:
        port["protocol"] = "TCP"  # defaulted by the apiserver
    app_c["resources"]["limits"]["cpu"] = "0.5"
    assert owned_fields_equal(live, owned)
    app_c["image"] = "evil:latest"
    assert owned_differences(live, owned) == ("spec.containers[app].image",)


def test_service_ports_match_kubedirector_member_services() -> None:
    sim_app = parse_app({**APP2.body, "metadata": {"name": "hello", "namespace": "default"}})
    cdoc = CLUSTER.body
    cdoc["metadata"] = {"name": "hello-dev", "namespace": "default", "uid": "u"}
    sim_cluster = parse_cluster(cdoc, sim_app)
    svc = render_member_service(sim_cluster, sim_app, sim_cluster.role("worker"), "kdss-w-0")
    assert service_ports(APP2, "worker") == svc["spec"]["ports"] == [{"name": "http-hello-http", "port": 8081}]
    assert service_ports(APP2, "controller") == []


@pytest.mark.parametrize(
    "a,b,equal",
    [("1", "1000m", True), ("1Gi", "1024Mi", True), ("0.5", "500m", True), ("1G", "1Gi", False), ("100m", "200m", False)],
)
def test_quantities(a: str, b: str, equal: bool) -> None:
    assert quantities_equal(a, b) is equal
    assert resources_equal({"limits": {"cpu": a}}, {"limits": {"cpu": b}}) is equal


def test_unknown_role_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match='no role "nope"'):
        owned_template(APP1, CLUSTER, "nope", from_version=None, rules=None)


def test_empty_env_value_omitted_by_the_api_is_not_drift() -> None:
    live = kd_statefulset(APP1, CLUSTER, "worker")["spec"]["template"]
    owned = owned_template(APP1, CLUSTER, "worker", from_version=None, rules=None)
    live = apply(live, template_patch(live, owned))
    init = container(live, "init", "initContainers")
    for env in init["env"]:
        if env["name"] == "GITOPS_KD_FROM_VERSION":
            del env["value"]  # what the apiserver returns for value ""
    assert owned_fields_equal(live, owned)
