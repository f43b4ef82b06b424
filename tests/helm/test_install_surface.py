"""What an installer meets (issue 44, 3): values.schema.json names a bad value's field, every documented option
renders, two releases share one cluster, NOTES.txt says what was installed and what uninstall leaves, and the
README's command hands the StatefulSets back to KubeDirector's update strategy as written."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kdsim.cluster import EmbeddedCluster
from tests.helm.chart import CHART, RELEASE_NS, one, render, run_helm, values
from tests.kdcluster import embedded_cluster


def _template(*sets: str) -> subprocess.CompletedProcess[str]:
    return run_helm("template", "gitops-kd", str(CHART), "-n", RELEASE_NS, *(a for s in sets for a in ("--set", s)))


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("config.bogus=1", "at '/config': additional properties 'bogus' not allowed"),
        ("config.interval=abc", "at '/config/interval'"),
        ("replicaCount=two", "at '/replicaCount': got string, want integer"),
        ("admission.failurePolicy=Maybe", "at '/admission/failurePolicy'"),
        ("bogus=1", "additional properties 'bogus' not allowed"),
    ],
)
def test_a_bad_value_fails_naming_the_field(setting: str, said: str) -> None:
    out = _template(setting)
    assert out.returncode != 0 and said in out.stderr, out.stderr


def _a_value_of_its_type(key: str, default: Any) -> str:
    """A non-default value for config.<key> of the type values.yaml documents."""
    if isinstance(default, bool):
        return f"config.{key}={str(not default).lower()}"
    if isinstance(default, int | float) or key == "workers":
        return f"config.{key}={(default or 0) + 3}"
    if isinstance(default, list):
        return f"config.{key}={{v1,v2}}"
    return f"config.{key}=v-{key}"


def test_every_documented_option_renders() -> None:
    """Each key of values.yaml set at once (config keys to a non-default value of their type, every optional part
    on): the chart renders and each config key reaches the ConfigMap."""
    config = values()["config"]
    sets = [_a_value_of_its_type(k, v) for k, v in config.items()]
    sets += [
        "admission.enabled=true",
        "admission.failurePolicy=Fail",
        "serviceMonitor.enabled=true",
        "prometheusRule.enabled=true",
        "ingress.enabled=true",
        "ui.authSecret=ui",
        "trustedKeys.team\\.asc=KEY",
        "extraArgs={--workers=4}",
        "imagePullSecrets[0].name=pull",
        "nodeSelector.disk=ssd",
        "podAnnotations.a=b",
        "image.tag=9.9.9",
        "replicaCount=3",
        "service.port=8081",
    ]
    docs = render(*sets)
    data = one(docs, "ConfigMap", "gitops-kd-config")["data"]
    for key in config:
        assert f"GITOPS_KD_{key.upper().replace('-', '_')}" in data, key
    kinds = {d["kind"] for d in docs}
    assert {"ServiceMonitor", "PrometheusRule", "Ingress", "ValidatingWebhookConfiguration"} <= kinds, kinds


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with embedded_cluster(tmp_path_factory.mktemp("helm-two"), controllers=False) as c:
        for ns in ("team-a", "team-b", "apps"):
            done = subprocess.run(
                ["kubectl", "--kubeconfig", str(c.kubeconfig), "create", "namespace", ns],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
        yield c


def test_two_releases_in_one_cluster_do_not_collide_and_notes_say_what_stays(cluster: EmbeddedCluster) -> None:
    """Helm refuses to adopt an object another release owns: both installs succeed only when every cluster-scoped
    name differs. NOTES.txt names what was installed and what uninstall leaves."""
    outs = {}
    for ns in ("team-a", "team-b"):
        out = run_helm(
            "install",
            "gitops-kd",
            str(CHART),
            "--kubeconfig",
            str(cluster.kubeconfig),
            "-n",
            ns,
            "--set",
            "admission.enabled=true",
        )
        assert out.returncode == 0, out.stderr
        outs[ns] = out.stdout
    notes = outs["team-b"]
    assert "ClusterRole and ClusterRoleBinding team-b-gitops-kd" in notes, notes
    assert "ValidatingWebhookConfiguration team-b-gitops-kd" in notes, notes
    assert "kubectl -n team-b rollout status deployment/gitops-kd" in notes, notes
    assert "the CRDs and their objects (KDRollouts, GitOpsKDSources" in notes and "RollingUpdate" in notes, notes
    names = subprocess.run(
        ["kubectl", "--kubeconfig", str(cluster.kubeconfig), "get", "clusterroles,validatingwebhookconfigurations", "-o", "name"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.split()
    for ns in ("team-a", "team-b"):
        assert f"clusterrole.rbac.authorization.k8s.io/{ns}-gitops-kd" in names, names
        assert f"validatingwebhookconfiguration.admissionregistration.k8s.io/{ns}-gitops-kd" in names, names
        cm = subprocess.run(
            ["kubectl", "--kubeconfig", str(cluster.kubeconfig), "-n", ns, "get", "configmap", "gitops-kd-config", "-o", "yaml"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert yaml.safe_load(cm.stdout)["data"]["GITOPS_KD_ADMISSION_CONFIG"] == f"{ns}-gitops-kd"
    for ns in ("team-a", "team-b"):
        assert run_helm("uninstall", "gitops-kd", "--kubeconfig", str(cluster.kubeconfig), "-n", ns).returncode == 0


def _statefulset(name: str) -> dict[str, Any]:
    labels = {"kubedirector.hpe.com/kdcluster": "hello-dev", "app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "apps", "labels": labels},
        "spec": {
            "serviceName": "hello-dev",
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": {"type": "OnDelete"},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "app", "image": "x"}]}},
        },
    }


def test_the_readme_hands_statefulsets_back_as_written(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    """Invariant: after uninstall no managed StatefulSet is left OnDelete once the documented command ran."""
    readme = (CHART / "README.md").read_text()
    [command] = re.findall(r"```sh\n(kubectl get statefulsets -A.*?)```", readme, re.S)
    notes = " ".join((CHART / "templates" / "NOTES.txt").read_text().split())
    assert " ".join(command.split()) in notes, "NOTES.txt and the README show different commands"
    manifest = tmp_path / "sts.yaml"
    manifest.write_text(yaml.safe_dump_all([_statefulset("hello-dev-web"), _statefulset("hello-dev-db")]))
    kubeconfig = ["--kubeconfig", str(cluster.kubeconfig)]
    assert subprocess.run(["kubectl", *kubeconfig, "apply", "-f", str(manifest)], capture_output=True, timeout=60).returncode == 0
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        capture_output=True,
        text=True,
        timeout=120,
        env={"KUBECONFIG": str(cluster.kubeconfig), "PATH": "/usr/local/bin:/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    for name in ("hello-dev-web", "hello-dev-db"):
        out = subprocess.run(
            ["kubectl", *kubeconfig, "-n", "apps", "get", "statefulset", name, "-o", "jsonpath={.spec.updateStrategy.type}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.stdout == "RollingUpdate", (name, out.stdout, out.stderr)
