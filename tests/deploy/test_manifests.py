"""deploy/: the kustomization renders and applies cleanly (real kubectl) to the embedded cluster; the CRDs it
installs are the packaged ones; the Deployment is wired the way operations need it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops_kd import __version__
from gitops_kd.crds import gitops_kd_crds
from kdsim.cluster import EmbeddedCluster
from tests.kdcluster import embedded_cluster

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
NS = "gitops-kd-system"


def kubectl(cluster: EmbeddedCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", str(cluster.kubeconfig), *args], capture_output=True, text=True, timeout=60)


def rendered() -> list[dict[str, Any]]:
    out = subprocess.run(["kubectl", "kustomize", str(DEPLOY)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with embedded_cluster(tmp_path_factory.mktemp("deploy"), controllers=False) as c:
        yield c


def test_the_kustomization_installs_the_packaged_crds_themselves() -> None:
    """One source: deploy/ renders gitops-kd's CRDs from gitops_kd/crds (no copy to keep in step), only labelled."""
    rendered_crds = {d["metadata"]["name"]: d for d in by_kind(rendered(), "CustomResourceDefinition")}
    packaged = {c["metadata"]["name"]: c for c in gitops_kd_crds()}
    assert rendered_crds.keys() == packaged.keys()
    for name, crd in rendered_crds.items():
        labels, own = crd["metadata"].pop("labels"), packaged[name]["metadata"].pop("labels", {})
        assert labels == {**own, "app.kubernetes.io/name": "gitops-kd", "app.kubernetes.io/part-of": "gitops-kd"}
        assert crd == packaged[name]
    assert not (DEPLOY / "crds").exists()


def test_kustomization_renders_every_piece_in_its_namespace() -> None:
    docs = rendered()
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
    assert kinds == sorted(
        [
            ("Namespace", NS),
            ("CustomResourceDefinition", "kdrollouts.gitops-kd.io"),
            ("CustomResourceDefinition", "gitopskdsources.gitops-kd.io"),
            ("ServiceAccount", "gitops-kd"),
            ("ClusterRole", "gitops-kd"),
            ("ClusterRoleBinding", "gitops-kd"),
            ("Role", "gitops-kd-leader-election"),
            ("RoleBinding", "gitops-kd-leader-election"),
            ("ConfigMap", "gitops-kd-config"),
            ("Deployment", "gitops-kd"),
            ("Service", "gitops-kd"),
        ]
    )
    for d in docs:
        if d["kind"] in ("ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Deployment", "Service"):
            assert d["metadata"]["namespace"] == NS, d["kind"]
    [crb] = by_kind(docs, "ClusterRoleBinding")
    assert crb["subjects"] == [{"kind": "ServiceAccount", "name": "gitops-kd", "namespace": NS}]


def test_deployment_runs_two_locked_down_leader_electing_replicas() -> None:
    docs = rendered()
    [dep] = by_kind(docs, "Deployment")
    [cm] = by_kind(docs, "ConfigMap")
    [svc] = by_kind(docs, "Service")
    spec = dep["spec"]["template"]["spec"]
    [c] = spec["containers"]
    assert dep["spec"]["replicas"] == 2
    assert c["image"] == f"ghcr.io/gitops-kd/gitops-kd:{__version__}"
    assert spec["serviceAccountName"] == "gitops-kd"
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] != 0
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["resources"]["requests"] and c["resources"]["limits"]
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    args = c["args"]
    assert args[0] == "run" and "--leader-elect" in args and "--lease-namespace=$(POD_NAMESPACE)" in args
    # every $(VAR) in args is defined, and every ConfigMap-sourced variable names an existing key
    env = {e["name"]: e for e in c["env"]}
    for arg in args:
        if "$(" in arg:
            assert arg.split("$(")[1].split(")")[0] in env, arg
    for e in env.values():
        ref = (e.get("valueFrom") or {}).get("configMapKeyRef")
        if ref:
            assert ref["name"] == cm["metadata"]["name"] and ref["key"] in cm["data"], e
    # the Secrets are the user's: referenced, not shipped
    assert not by_kind(docs, "Secret")
    secrets = {v["secret"]["secretName"] for v in spec["volumes"] if "secret" in v}
    assert secrets == {"gitops-kd-webhook", "gitops-kd-git"}
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert {"/tmp", "/var/lib/gitops-kd", "/etc/gitops-kd/webhook", "/etc/gitops-kd/git"} <= mounts
    assert svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
    assert svc["spec"]["ports"][0]["targetPort"] == c["ports"][0]["name"]


def test_kubectl_apply_k_applies_cleanly_and_is_idempotent(cluster: EmbeddedCluster) -> None:
    first = kubectl(cluster, "apply", "-k", str(DEPLOY))
    assert first.returncode == 0, first.stderr
    assert "error" not in first.stderr.lower(), first.stderr
    for kind, name in [
        ("deployment", "gitops-kd"),
        ("serviceaccount", "gitops-kd"),
        ("configmap", "gitops-kd-config"),
        ("service", "gitops-kd"),
        ("role.rbac.authorization.k8s.io", "gitops-kd-leader-election"),
        ("rolebinding.rbac.authorization.k8s.io", "gitops-kd-leader-election"),
    ]:
        got = kubectl(cluster, "-n", NS, "get", kind, name, "-o", "json")
        assert got.returncode == 0, (kind, got.stderr)
        assert json.loads(got.stdout)["metadata"]["namespace"] == NS
    for kind, name in [
        ("clusterrole", "gitops-kd"),
        ("clusterrolebinding", "gitops-kd"),
        ("crd", "kdrollouts.gitops-kd.io"),
        ("namespace", NS),
    ]:
        got = kubectl(cluster, "get", kind, name, "-o", "name")
        assert got.returncode == 0, (kind, got.stderr)
    dep = json.loads(kubectl(cluster, "-n", NS, "get", "deployment", "gitops-kd", "-o", "json").stdout)
    assert dep["spec"]["replicas"] == 2
    again = kubectl(cluster, "apply", "-k", str(DEPLOY))
    assert again.returncode == 0, again.stderr
    assert all(line.endswith("unchanged") for line in again.stdout.strip().splitlines()), again.stdout
    # the CRD kubectl applied still serves KDRollouts
    listed = kubectl(cluster, "get", "kdro", "-A")
    assert listed.returncode == 0, listed.stderr
