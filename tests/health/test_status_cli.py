"""End to end: `gitops-kd status` against an EmbeddedCluster running the simulated KubeDirector, with
KDRollouts written by the test (no gitops-kd controller)."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from gitops_kd.cli import main
from kdsim.cluster import EmbeddedCluster
from kdsim.images import ImageBehavior, store_for
from kubeplumb.rest import RestClient
from tests.kdcluster import embedded_cluster

KD = "kubedirector.hpe.com/v1beta1"
RO = "gitops-kd.io/v1alpha1"
NS = "default"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with embedded_cluster(tmp_path_factory.mktemp("health-e2e")) as c:
        yield c


@pytest.fixture(scope="module")
def rest(cluster: EmbeddedCluster) -> RestClient:
    return RestClient(cluster.api_client())


@pytest.fixture(scope="module")
def centos_app(kd_shared: Path) -> dict[str, Any]:
    return json.loads((kd_shared / "catalog" / "cr-app-centos7.json").read_text())


@pytest.fixture(scope="module")
def centos_cluster(kd_shared: Path) -> dict[str, Any]:
    return yaml.safe_load((kd_shared / "clusters" / "cr-cluster-centos7.yaml").read_text())


def status(cluster: EmbeddedCluster, *args: str) -> Result:
    return CliRunner().invoke(main, ["status", "--kubeconfig", str(cluster.kubeconfig), *args])


def poll(what: str, probe: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last={last!r}")


def create_app(rest: RestClient, app: dict[str, Any], name: str, image: str | None = None) -> None:
    body = copy.deepcopy(app)
    body["metadata"] = {"name": name, "namespace": NS}
    if image:
        body["spec"]["defaultImageRepoTag"] = image
    rest.create(KD, "kubedirectorapps", NS, body)


def create_cluster(rest: RestClient, doc: dict[str, Any], name: str, app: str) -> None:
    body = copy.deepcopy(doc)
    body["metadata"] = {"name": name, "namespace": NS}
    body["spec"]["app"] = app
    rest.create(KD, "kubedirectorclusters", NS, body)


def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": 1,
        "lastTransitionTime": "2024-01-01T00:00:00Z",
    }


def create_rollout(rest: RestClient, name: str, app: str, target: str, **status: Any) -> None:
    rest.create(
        RO,
        "kdrollouts",
        NS,
        {"apiVersion": RO, "kind": "KDRollout", "metadata": {"name": name}, "spec": {"app": app, "targetVersion": target}},
    )
    if status:
        set_rollout_status(rest, name, **status)


def set_rollout_status(rest: RestClient, name: str, **status: Any) -> None:
    rest.patch(RO, "kdrollouts", NS, name, {"status": {"observedGeneration": 1, **status}}, subresource="status")


def objects(result: Result) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["name"]): o for o in json.loads(result.output)["objects"]}


def by_kind(result: Result, kind: str) -> list[dict[str, Any]]:
    return [o for o in json.loads(result.output)["objects"] if o["kind"] == kind]


def line_of(result: Result, name: str) -> str:
    return next((line for line in result.output.splitlines() if line.startswith(f"{NS}/{name} ")), "")


def test_healthy_cluster(
    cluster: EmbeddedCluster, rest: RestClient, centos_app: dict[str, Any], centos_cluster: dict[str, Any]
) -> None:
    create_app(rest, centos_app, "centos7x")
    create_cluster(rest, centos_cluster, "centos7", "centos7x")
    create_rollout(
        rest,
        "centos7",
        "centos7x",
        "1.1",
        phase="Idle",
        appVersion="1.1",
        conditions=[condition("Ready", "True", "UpToDate", "all members run centos7x 1.1")],
    )

    # the member Service is a LoadBalancer; the embedded cluster's servicelb gives it a loopback ingress
    r = poll("centos7 Healthy", lambda: (res := status(cluster)).exit_code == 0 and "Healthy" in line_of(res, "centos7") and res)
    line = line_of(r, "centos7")
    for word in ("centos7x", "1.1", "Idle", "Healthy", "all members run centos7x 1.1"):
        assert word in line, r.output
    assert "KubeDirector: stock KubeDirector" in r.output.splitlines()[0], r.output  # its CRDs are master's

    r = status(cluster, "centos7")
    assert r.exit_code == 0, r.output
    for kind in ("KDRollout", "KubeDirectorCluster", "StatefulSet", "Pod", "Service"):
        assert any(row.split()[:1] == [kind] and "Healthy" in row for row in r.output.splitlines()), (kind, r.output)
    rows = objects(status(cluster, "centos7", "-o", "json"))
    kdc = rest.get(KD, "kubedirectorclusters", NS, "centos7")
    role = kdc["status"]["roles"][0]
    assert rows[("StatefulSet", role["statefulSet"])]["role"] == "vanilla_centos"
    assert rows[("Pod", role["members"][0]["pod"])]["status"] == "Healthy"
    assert rows[("Service", kdc["status"]["clusterService"])]["status"] == "Healthy"
    assert all(o["status"] == "Healthy" for o in rows.values())

    # an upgrade in progress: version live → target, Progressing, still exit 0
    rest.patch(RO, "kdrollouts", NS, "centos7", {"spec": {"targetVersion": "1.2"}})
    set_rollout_status(
        rest,
        "centos7",
        observedGeneration=2,
        phase="Upgrading",
        step="replacing kdss-x-0",
        conditions=[
            condition("Reconciling", "True", "Upgrading", "upgrading centos7x from 1.1 to 1.2"),
            condition("Ready", "False", "Upgrading", "upgrading"),
        ],
    )
    r = status(cluster)
    assert r.exit_code == 0 and "1.1 → 1.2" in line_of(r, "centos7") and "Progressing" in line_of(r, "centos7"), r.output


def test_never_ready_image_is_progressing_then_a_stalled_rollout_is_degraded(
    cluster: EmbeddedCluster, rest: RestClient, centos_app: dict[str, Any], centos_cluster: dict[str, Any]
) -> None:
    image = "docker.io/bluedata/centos7:never-ready"
    store_for(cluster).add(image, {}, behavior=ImageBehavior(never_ready=True))
    create_app(rest, centos_app, "centos7-stuck", image)
    create_cluster(rest, centos_cluster, "stuck", "centos7-stuck")
    create_rollout(
        rest,
        "stuck",
        "centos7-stuck",
        "1.1",
        phase="Upgrading",
        conditions=[condition("Reconciling", "True", "Upgrading", "upgrading centos7-stuck to 1.1")],
    )

    def pod_running() -> Result | None:
        r = status(cluster, "stuck", "-o", "json")
        pods, kdc, sts = by_kind(r, "Pod"), by_kind(r, "KubeDirectorCluster"), by_kind(r, "StatefulSet")
        return (
            r
            if (
                pods
                and "ContainersNotReady" in pods[0]["message"]
                and kdc[0]["message"].startswith("creating")
                and sts
                and "ready" in sts[0]["message"]
            )
            else None
        )

    r = poll("the never-ready pod running, KubeDirector and the StatefulSet controller reporting it", pod_running)
    assert r.exit_code == 0
    pod = by_kind(r, "Pod")[0]
    assert pod["status"] == "Progressing" and "containers with unready status: [app]" in pod["message"]
    assert by_kind(r, "KubeDirectorCluster")[0]["status"] == "Progressing"
    assert by_kind(r, "KubeDirectorCluster")[0]["message"].startswith("creating")
    sts = by_kind(r, "StatefulSet")[0]
    assert (sts["status"], sts["message"]) == ("Progressing", "Waiting for 1 pods to be ready...")

    set_rollout_status(
        rest,
        "stuck",
        phase="Stalled",
        stalledReason="PodNotReady",
        conditions=[
            condition("Reconciling", "False", "Stalled", "stalled"),
            condition("Stalled", "True", "PodNotReady", f"pod {pod['name']} not Ready within 300s"),
        ],
    )
    r = status(cluster)
    assert r.exit_code == 1
    line = line_of(r, "stuck")
    assert "Degraded" in line and "PodNotReady" in line and pod["name"] in line, r.output


def test_crash_looping_image_is_degraded_with_the_reason(
    cluster: EmbeddedCluster, rest: RestClient, centos_app: dict[str, Any], centos_cluster: dict[str, Any]
) -> None:
    image = "docker.io/bluedata/centos7:crashes"
    store_for(cluster).add(image, {}, behavior=ImageBehavior(crash_loop=True))
    create_app(rest, centos_app, "centos7-crash", image)
    create_cluster(rest, centos_cluster, "crashy", "centos7-crash")
    create_rollout(
        rest,
        "crashy",
        "centos7-crash",
        "1.1",
        phase="Upgrading",
        conditions=[condition("Reconciling", "True", "Upgrading", "upgrading")],
    )

    def degraded() -> Result | None:
        r = status(cluster, "crashy", "-o", "json")
        return r if json.loads(r.output)["status"] == "Degraded" else None

    r = poll("crashy Degraded", degraded)
    assert r.exit_code == 1
    summary = json.loads(r.output)
    assert summary["message"].startswith("Pod ") and (
        "CrashLoopBackOff" in summary["message"] or "restarted" in summary["message"]
    ), summary


def test_missing_objects_and_unknown_cluster(cluster: EmbeddedCluster, rest: RestClient) -> None:
    create_rollout(
        rest,
        "orphan",
        "centos7x",
        "1.1",
        phase="Idle",
        appVersion="1.1",
        conditions=[condition("Ready", "True", "UpToDate", "ok")],
    )
    r = status(cluster, "-A")
    assert r.exit_code == 1
    line = line_of(r, "orphan")
    assert "Missing" in line and "KubeDirectorCluster orphan not found" in line, r.output

    r = status(cluster, "no-such-cluster")
    assert r.exit_code == 1 and "no KDRollout or KubeDirectorCluster named no-such-cluster" in r.output

    r = status(cluster, "-n", "empty-namespace")
    assert r.exit_code == 0 and "no KDCluster managed by gitops-kd" in r.output

    r = status(cluster, "-A", "orphan")
    assert r.exit_code == 2 and "-n NAMESPACE" in r.output
