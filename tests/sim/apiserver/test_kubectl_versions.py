"""`kubectl create configmap|secret|namespace|serviceaccount` and `kubectl auth whoami` with the oldest and newest
kubectl on the machine: 1.32+ send built-in objects in protobuf, which the embedded server decodes; a custom resource
in protobuf is 415."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml
from apiserver_util import raw

from kdsim.cluster import EmbeddedCluster
from tests.kubectl_streams import kubectl_path

VERSIONS = ("1.27", "1.33")  # the oldest (JSON bodies) and the newest (protobuf bodies) kubectl here


def run(cluster: EmbeddedCluster, version: str, *args: str) -> str:
    done = subprocess.run(
        [kubectl_path(version), "--kubeconfig", str(cluster.kubeconfig), *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, f"kubectl {version} {' '.join(args)}: {done.stderr}"
    return done.stdout


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_create_of_built_in_kinds(cluster: EmbeddedCluster, version: str, tmp_path: Path) -> None:
    ns = f"v{version.replace('.', '')}-{uuid.uuid4().hex[:6]}"
    run(cluster, version, "create", "namespace", ns)
    blob = tmp_path / "blob.bin"
    blob.write_bytes(bytes(range(256)))
    run(cluster, version, "-n", ns, "create", "configmap", "cm", "--from-literal=greeting=hello", f"--from-file=blob={blob}")
    run(cluster, version, "-n", ns, "create", "secret", "generic", "token", "--from-literal=token=s3cret")
    run(cluster, version, "-n", ns, "create", "serviceaccount", "robot")
    cm = json.loads(run(cluster, version, "-n", ns, "get", "configmap", "cm", "-o", "json"))
    assert cm["data"] == {"greeting": "hello"}
    assert base64.b64decode(cm["binaryData"]["blob"]) == bytes(range(256))
    secret = json.loads(run(cluster, version, "-n", ns, "get", "secret", "token", "-o", "json"))
    assert base64.b64decode(secret["data"]["token"]) == b"s3cret" and secret["type"] == "Opaque"
    assert json.loads(run(cluster, version, "get", "namespace", ns, "-o", "json"))["metadata"]["name"] == ns
    assert run(cluster, version, "-n", ns, "get", "serviceaccount", "robot", "-o", "name") == "serviceaccount/robot\n"


def test_a_body_in_a_media_type_the_server_cannot_decode_is_415(cluster: EmbeddedCluster) -> None:
    for path, ctype in (
        ("/api/v1/namespaces/default/configmaps", "application/xml"),
        ("/apis/kubedirector.hpe.com/v1beta1/namespaces/default/kubedirectorapps", "application/vnd.kubernetes.protobuf"),
    ):
        status, body = raw(cluster, "POST", path, b"k8s\x00", content_type=ctype)
        answer = json.loads(body)
        assert status == 415 and answer["reason"] == "UnsupportedMediaType", (path, status, answer)
        assert answer["message"] == (
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
        )


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_auth_can_i(cluster: EmbeddedCluster, version: str) -> None:
    """The embedded server authorizes everything (no RBAC): a SelfSubjectAccessReview is allowed and the
    SelfSubjectRulesReview lists the AlwaysAllow authorizer's wildcards."""
    assert run(cluster, version, "auth", "can-i", "delete", "statefulsets", "-n", "default") == "yes\n"
    assert run(cluster, version, "auth", "can-i", "create", "pods/exec", "--all-namespaces") == "yes\n"
    assert run(cluster, version, "auth", "can-i", "get", "/healthz") == "yes\n"
    listing = run(cluster, version, "auth", "can-i", "--list", "-n", "default").splitlines()
    assert listing[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert [line.split() for line in listing[1:]] == [["*.*", "[]", "[]", "[*]"], ["[*]", "[]", "[*]"]]


def test_a_self_subject_access_review_without_attributes_is_422(cluster: EmbeddedCluster) -> None:
    body = json.dumps({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}})
    status, answer = raw(cluster, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body.encode())
    assert status == 422 and json.loads(answer)["message"] == (
        'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: null: '
        "exactly one of nonResourceAttributes or resourceAttributes must be specified"
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_explain_built_in_and_custom_kinds(cluster: EmbeddedCluster, version: str) -> None:
    """Schemas from /openapi/v3 (and, for 1.27, the protobuf /openapi/v2): built-in fields with their real
    descriptions and types, a CRD's fields from its openAPIV3Schema."""
    ports = run(cluster, version, "explain", "pod.spec.containers.ports")
    assert "FIELD: ports <[]ContainerPort>" in ports
    assert "containerPort\t<integer> -required-" in ports and "Number of port to expose on the pod's IP" in ports
    sts = run(cluster, version, "explain", "statefulsets.spec.updateStrategy")
    assert "GROUP:      apps" in sts and "rollingUpdate\t<RollingUpdateStatefulSetStrategy>" in sts
    kd = run(cluster, version, "explain", "kubedirectorclusters.spec")
    assert "KIND:       KubeDirectorCluster" in kd and "app\t<string> -required-" in kd


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_apply_diff_edit(cluster: EmbeddedCluster, version: str, tmp_path: Path) -> None:
    """kubectl 1.27-1.28 read the protobuf /openapi/v2 for apply, diff and edit (a 404 there fails them)."""
    ns = f"e{version.replace('.', '')}-{uuid.uuid4().hex[:6]}"
    run(cluster, version, "create", "namespace", ns)
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: {ns}\ndata:\n  a: '1'\n")
    assert run(cluster, version, "apply", "-f", str(manifest)) == "configmap/cm created\n"
    manifest.write_text(manifest.read_text().replace("'1'", "'2'"))
    diff = subprocess.run(
        [kubectl_path(version), "--kubeconfig", str(cluster.kubeconfig), "diff", "-f", str(manifest)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert diff.returncode == 1 and '-  a: "1"' in diff.stdout and '+  a: "2"' in diff.stdout, diff.stderr
    edit = subprocess.run(
        [kubectl_path(version), "--kubeconfig", str(cluster.kubeconfig), "-n", ns, "edit", "cm", "cm"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KUBE_EDITOR": "sed -i s/^\\ \\ a:\\ .*/\\ \\ a:\\ edited/"},
    )
    assert edit.returncode == 0 and edit.stdout == "configmap/cm edited\n", edit.stderr
    assert json.loads(run(cluster, version, "-n", ns, "get", "cm", "cm", "-o", "json"))["data"] == {"a": "edited"}


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_apply_merges_lists_by_their_patch_merge_key(cluster: EmbeddedCluster, version: str, tmp_path: Path) -> None:
    """A re-apply changing the image keeps the env var another client added to the container (the patch
    merges the containers and their env by name instead of replacing the lists)."""
    ns = f"m{version.replace('.', '')}-{uuid.uuid4().hex[:6]}"
    run(cluster, version, "create", "namespace", ns)
    manifest = tmp_path / "sts.yaml"
    text = (
        f"apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: web\n  namespace: {ns}\nspec:\n"
        "  serviceName: web\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n"
        "      labels: {app: web}\n    spec:\n      containers:\n      - name: app\n        image: IMAGE\n"
        "        env:\n        - {name: A, value: '1'}\n"
    )
    manifest.write_text(text.replace("IMAGE", "web:1"))
    run(cluster, version, "apply", "-f", str(manifest))
    run(cluster, version, "-n", ns, "set", "env", "statefulset/web", "B=2")
    manifest.write_text(text.replace("IMAGE", "web:2"))
    run(cluster, version, "apply", "-f", str(manifest))
    container = json.loads(run(cluster, version, "-n", ns, "get", "sts", "web", "-o", "json"))["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert container["image"] == "web:2" and container["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_auth_whoami(cluster: EmbeddedCluster, version: str) -> None:
    """1.27 asks authentication.k8s.io/v1beta1 first, 1.28+ v1 (in protobuf from 1.32); the token is the user."""
    token = yaml.safe_load(cluster.kubeconfig.read_text())["users"][0]["user"]["token"]
    table = run(cluster, version, "auth", "whoami")
    assert table.split() == ["ATTRIBUTE", "VALUE", "Username", token, "Groups", "[system:authenticated]"]
    review = json.loads(run(cluster, version, "auth", "whoami", "--as", "jane", "--as-group", "devs", "-o", "json"))
    assert review["apiVersion"] == ("authentication.k8s.io/v1beta1" if version == "1.27" else "authentication.k8s.io/v1")
    assert review["kind"] == "SelfSubjectReview" and review["metadata"]["creationTimestamp"]
    assert review["status"] == {"userInfo": {"username": "jane", "groups": ["devs", "system:authenticated"]}}
