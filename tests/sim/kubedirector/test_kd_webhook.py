"""kd_app_edits="strict" (the default): kubectl against the embedded cluster is refused, like stock KubeDirector's
webhook, every edit and delete of a KDApp a running KDCluster uses, and a KDCluster's app, appCatalog and role
properties of a role with members (pkg/validator/cluster.go); "upgrade" admits the KDApp edits."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from gitops_kd.testing import wait_for
from kdsim.cluster import EmbeddedCluster
from kubeplumb.rest import RestClient

KD = "kubedirector.hpe.com/v1beta1"
NS = "default"
TEMPLATE = Path(__file__).resolve().parents[3] / "repo-template"
APP, CLUSTER, NEXT = (
    TEMPLATE / "apps" / "hello.yaml",
    TEMPLATE / "clusters" / "hello-dev.yaml",
    TEMPLATE / "examples" / "hello-2.0.0.yaml",
)
DENIED = (
    'admission webhook "hard-validate-cr.kubedirector.hpe.com" denied the request: \nKubeDirectorApp resource '
    "cannot be deleted or modified while referenced by the following KubeDirectorCluster resources: {}"
)
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def _kubectl(kubeconfig: Path) -> Kubectl:
    def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), *args], input=input, capture_output=True, text=True, timeout=60
        )

    return run


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(tmp_path_factory.mktemp("kd-strict"), controllers=True, kd_app_edits="strict") as c:
        kubectl = _kubectl(c.kubeconfig)
        for path in (APP, CLUSTER):
            assert kubectl("apply", "-f", str(path)).returncode == 0
        rest = RestClient(c.api_client())
        wait_for(
            "hello-dev configured",
            lambda: (rest.get(KD, "kubedirectorclusters", NS, "hello-dev").get("status") or {}).get("state") == "configured",
            120,
        )
        yield c


def _app(cluster: EmbeddedCluster, name: str = "hello") -> dict[str, Any]:
    app = cluster.store.get(KD, "kubedirectorapps", NS, name)
    assert app is not None
    return dict(app)


EDITS = {
    "patch-merge": ("patch", "kdapp", "hello", "--type=merge", "-p", '{"spec":{"version":"1.0.1"}}'),
    "patch-json": (
        "patch",
        "kdapp",
        "hello",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/roles/0/imageRepoTag","value":"gitops-kd/hello:2.0.0"}]',
    ),
    "apply": ("apply", "-f", str(NEXT)),
    "apply-server-side": ("apply", "--server-side", "--force-conflicts", "-f", str(NEXT)),
    "replace": ("replace", "-f", str(NEXT)),
    "delete": ("delete", "kdapp", "hello", "--wait=false"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_app_in_use_is_not_edited_or_deleted(strict: EmbeddedCluster, edit: str) -> None:
    before = _app(strict)
    out = _kubectl(strict.kubeconfig)(*EDITS[edit])
    assert out.returncode == 1, out.stdout
    message = DENIED.format("default/hello-dev")
    assert out.stderr.startswith("Error from server: "), out.stderr
    assert out.stderr.endswith(message + "\n"), out.stderr
    if edit in ("patch-merge", "patch-json", "delete"):  # apply and replace prefix kubectl's own context
        assert out.stderr == f"Error from server: {message}\n"
    assert _app(strict) == before


def test_the_answer_is_a_webhook_denial_status(strict: EmbeddedCluster) -> None:
    api = kubernetes.client.CustomObjectsApi(strict.api_client())
    with pytest.raises(ApiException) as raised:
        api.patch_namespaced_custom_object(
            "kubedirector.hpe.com", "v1beta1", NS, "kubedirectorapps", "hello", {"spec": {"version": "1.0.1"}}
        )
    assert raised.value.status == 400
    assert json.loads(raised.value.body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": DENIED.format("default/hello-dev"),
        "code": 400,
    }


def test_edits_kubedirector_does_not_count_are_admitted(strict: EmbeddedCluster) -> None:
    kubectl = _kubectl(strict.kubeconfig)
    assert kubectl("label", "kdapp", "hello", "team=demo").returncode == 0
    upgrade_only = yaml.safe_load(APP.read_text())  # spec.upgrade is not a field of KD's KubeDirectorAppSpec
    upgrade_only["spec"]["upgrade"] = yaml.safe_load(NEXT.read_text())["spec"]["upgrade"]
    out = kubectl("apply", "-f", "-", input=yaml.safe_dump(upgrade_only))
    assert out.returncode == 0, out.stderr
    app = _app(strict)
    assert app["metadata"]["labels"]["team"] == "demo" and "upgrade" in app["spec"]


def test_an_app_no_cluster_uses_is_edited_and_deleted(strict: EmbeddedCluster) -> None:
    kubectl = _kubectl(strict.kubeconfig)
    idle = yaml.safe_load(APP.read_text())
    idle["metadata"]["name"] = "idle"
    assert kubectl("apply", "-f", "-", input=yaml.safe_dump(idle)).returncode == 0
    out = kubectl("patch", "kdapp", "idle", "--type=merge", "-p", '{"spec":{"version":"1.0.1"}}')
    assert out.returncode == 0, out.stderr
    assert _app(strict, "idle")["spec"]["version"] == "1.0.1"
    out = kubectl("delete", "kdapp", "idle")
    assert out.returncode == 0, out.stderr
    assert strict.store.get(KD, "kubedirectorapps", NS, "idle") is None


def test_upgrade_mode_admits_the_edit_and_the_delete(tmp_path: Path) -> None:
    with EmbeddedCluster(tmp_path / "c", controllers=False, kd_app_edits="upgrade") as c:
        kubectl = _kubectl(c.kubeconfig)
        for path in (APP, CLUSTER):
            assert kubectl("apply", "-f", str(path)).returncode == 0
        out = kubectl("apply", "-f", str(NEXT))
        assert out.returncode == 0, out.stderr
        assert _app(c)["spec"]["version"] == "2.0.0"
        assert kubectl("delete", "kdapp", "hello").returncode == 0


CLUSTER_DENIED = 'admission webhook "hard-validate-cr.kubedirector.hpe.com" denied the request: \n{}'


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ('{"spec":{"app":"other"}}', "The app property is read-only."),
        ('{"spec":{"appCatalog":"system"}}', "The appCatalog property is read-only."),
    ],
)
def test_a_clusters_app_is_read_only(strict: EmbeddedCluster, patch: str, message: str) -> None:
    before = strict.store.get(KD, "kubedirectorclusters", NS, "hello-dev")
    out = _kubectl(strict.kubeconfig)("patch", "kdcluster", "hello-dev", "--type=merge", "-p", patch)
    assert out.returncode == 1 and out.stderr == f"Error from server: {CLUSTER_DENIED.format(message)}\n", out.stderr
    assert strict.store.get(KD, "kubedirectorclusters", NS, "hello-dev") == before


def test_a_role_with_members_changes_only_its_members(strict: EmbeddedCluster) -> None:
    kubectl = _kubectl(strict.kubeconfig)
    cluster = dict(strict.store.get(KD, "kubedirectorclusters", NS, "hello-dev") or {})
    roles = [dict(r) for r in cluster["spec"]["roles"]]
    worker = next(i for i, r in enumerate(roles) if r["id"] == "worker")
    changed = [{**r, "podLabels": {"team": "blue"}} if i == worker else r for i, r in enumerate(roles)]
    out = kubectl("patch", "kdcluster", "hello-dev", "--type=merge", "-p", json.dumps({"spec": {"roles": changed}}))
    message = "Role(worker) properties other than the members count cannot be modified while role members exist."
    assert out.returncode == 1 and out.stderr == f"Error from server: {CLUSTER_DENIED.format(message)}\n", out.stderr
    members = [{**r, "members": 1} if i == worker else r for i, r in enumerate(roles)]
    out = kubectl("patch", "kdcluster", "hello-dev", "--type=merge", "-p", json.dumps({"spec": {"roles": members}}))
    assert out.returncode == 0, out.stderr


def test_sim_serve_kd_app_edits_strict(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from gitops_kd.cli import main; main()",
            "sim",
            "serve",
            "--state-dir",
            str(tmp_path / "state"),
            "--no-controllers",
            "--kd-app-edits",
            "strict",
            "--kubeconfig",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("API server: "), proc.stderr.read() if proc.poll() else ""
        proc.stdout.readline()
        kubectl = _kubectl(kubeconfig)
        for path in (APP, CLUSTER):
            assert kubectl("apply", "-f", str(path)).returncode == 0
        out = kubectl("delete", "kdapp", "hello")
        assert out.returncode == 1 and out.stderr == f"Error from server: {DENIED.format('default/hello-dev')}\n"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
