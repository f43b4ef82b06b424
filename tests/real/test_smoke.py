"""Smoke test of the real control plane: namespaces, the packaged CRDs, StatefulSet pods and deploy/ RBAC."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from gitops_kd.testing import wait_for
from kubeplumb.rest import RestClient
from tests.real.controlplane import CRD_FILES, GITOPS_KD_USER, ROOT, ControlPlane, expected_version

pytestmark = pytest.mark.real
KD = "kubedirector.hpe.com/v1beta1"


def _established(real_cp: ControlPlane, name: str) -> bool:
    crd = json.loads(real_cp.kubectl("get", "crd", name, "-o", "json").stdout)
    return any(c["type"] == "Established" and c["status"] == "True" for c in crd["status"].get("conditions", []))


def test_server_is_v1_20_2_and_kubectl_sees_the_namespace(real_cp: ControlPlane, real_ns: str) -> None:
    version = client.VersionApi(real_cp.api_client()).get_code()
    assert version.git_version == expected_version()  # v1.20.2 unless $REALK8S_BIN names other binaries
    assert real_cp.kubectl("get", "namespace", real_ns, "-o", "name").stdout.strip() == f"namespace/{real_ns}"


def test_packaged_crds_install_and_take_a_kdapp_with_empty_strings(real_cp: ControlPlane, real_ns: str) -> None:
    for path in CRD_FILES:
        real_cp.kubectl("apply", "-f", str(path))
    for path in CRD_FILES:
        name = yaml.safe_load(path.read_text())["metadata"]["name"]
        wait_for(f"CRD {name} Established", lambda n=name: _established(real_cp, n), 30)
    app = yaml.safe_load((ROOT / "repo-template" / "apps" / "hello.yaml").read_text())
    app["metadata"]["namespace"] = real_ns
    app["spec"]["label"]["description"] = ""  # a server built with Go >= 1.19 answers 422 "null" here
    rest = RestClient(real_cp.api_client())
    created = rest.create(KD, "kubedirectorapps", real_ns, app)
    assert created["spec"]["label"]["description"] == ""
    listed = real_cp.kubectl("-n", real_ns, "get", "kubedirectorapps", "-o", "name").stdout.split()
    assert listed == ["kubedirectorapp.kubedirector.hpe.com/hello"]


def _statefulset(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "app", "image": "example/none:1"}]}},
        },
    }


def test_controller_manager_creates_statefulset_pods(real_cp: ControlPlane, real_ns: str) -> None:
    apps = client.AppsV1Api(real_cp.api_client())
    core = client.CoreV1Api(real_cp.api_client())
    sts = apps.create_namespaced_stateful_set(real_ns, _statefulset("web", 2))

    def pods() -> list[Any] | None:
        items = core.list_namespaced_pod(real_ns, label_selector="app=web").items
        return items if len(items) == 2 else None

    found = sorted(wait_for("2 pods of StatefulSet web", pods, 60), key=lambda p: p.metadata.name)
    assert [p.metadata.name for p in found] == ["web-0", "web-1"]
    for pod in found:
        assert pod.metadata.labels["statefulset.kubernetes.io/pod-name"] == pod.metadata.name
        assert pod.metadata.labels["controller-revision-hash"].startswith("web-")
        assert [(o.kind, o.name, o.uid) for o in pod.metadata.owner_references] == [("StatefulSet", "web", sts.metadata.uid)]
        assert pod.status.phase == "Pending"  # no node, no scheduler


def test_deploy_rbac_lets_the_service_account_do_its_job_and_no_more(
    real_cp: ControlPlane, real_ns: str, gitops_kd_kubeconfig: Path
) -> None:
    kubeconfig = gitops_kd_kubeconfig

    def can(verb: str, resource: str) -> str:
        done = real_cp.kubectl("auth", "can-i", verb, resource, "-n", real_ns, kubeconfig=kubeconfig, check=False)
        return done.stdout.strip()

    assert can("patch", "services") == "yes"
    assert can("delete", "pods") == "yes"
    assert can("update", "kubedirectorclusters.kubedirector.hpe.com") == "yes"
    assert can("list", "secrets") == "no"
    assert can("delete", "statefulsets.apps") == "no"
    sa_api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
    assert sa_api.list_namespaced_service(real_ns).items == []
    with pytest.raises(ApiException) as refused:
        sa_api.list_namespaced_secret(real_ns)
    assert refused.value.status == 403
    assert [(e["verb"], e["objectRef"]["resource"]) for e in real_cp.forbidden(GITOPS_KD_USER, real_ns)] == [("list", "secrets")]
