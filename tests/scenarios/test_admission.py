"""Admission on both backends: deploy/ with its optional admission component, the ValidatingWebhookConfiguration
registered in the API server (kube-apiserver v1.20.2 on the real backend) and `gitops-kd run --admission-listen` as
the gitops-kd ServiceAccount serving it. Invariant: an out-of-band edit of a field gitops-kd owns is refused before
it is stored (the object keeps Git's value), the refusal naming the object, the field and the Git file; deleting a
KDApp Git declares is refused too; a label outside the owned fields passes."""

from __future__ import annotations

import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gitops_kd.testing import wait_for
from tests.admission.test_webhook import SPECS, VWC, WORKLOADS, overlay
from tests.deploy.test_rbac import ROOT, SYSTEM_NS
from tests.e2e.harness import E2E
from tests.scenarios.runs import clean_system_namespace, kubectl_apply, start_run

pytestmark = pytest.mark.backends
ROLE_LABEL = "kubedirector.hpe.com/role"
SERVING = re.compile(r"serving the admission webhook on https://[0-9.]+:(\d+)/admission")


def machine_address() -> str:
    """This machine's own non-loopback IPv4 address: a real API server refuses an Endpoints address in 127.0.0.0/8
    (`may not be in the loopback range`), so the webhook serves where a pod's address would be."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: only the route is looked up
        address = str(probe.getsockname()[0])
    assert not address.startswith("127."), f"no non-loopback IPv4 address on this machine ({address})"
    return address


@pytest.fixture
def admission(world: E2E, tmp_path: Path) -> Iterator[None]:
    """The admission component applied (kubectl apply -k of an overlay); on the real backend's shared control plane
    removed afterwards: the webhook configuration and Service deleted, deploy/'s RBAC applied again."""
    clean_system_namespace(world)
    applied = subprocess.run(
        ["kubectl", "--kubeconfig", str(world.backend.kubeconfig), "apply", "-k", str(overlay(tmp_path))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert applied.returncode == 0, applied.stderr
    yield
    if world.backend.name != "embedded":
        for api, plural, ns, name in (
            VWC + (None, "gitops-kd"),
            ("v1", "services", SYSTEM_NS, "gitops-kd-admission"),
            ("v1", "endpoints", SYSTEM_NS, "gitops-kd-admission"),
        ):
            if world.rest.get_or_none(api, plural, ns, name) is not None:
                world.rest.delete(api, plural, ns, name)
        again = subprocess.run(
            ["kubectl", "--kubeconfig", str(world.backend.kubeconfig), "apply", "-k", str(ROOT / "deploy")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert again.returncode == 0, again.stderr


def test_an_out_of_band_edit_is_refused_by_the_registered_webhook(world: E2E, admission: None, tmp_path: Path) -> None:
    address = machine_address()
    proc = start_run(world, tmp_path, "controller", "--no-leader-elect", "--admission-listen", f"{address}:0")
    try:

        def port() -> int | None:
            found = SERVING.search(proc.log())
            return int(found.group(1)) if found else None

        live = wait_for("the admission webhook serving", port, 60)
        # what the endpoints controller writes for the Service when the gitops-kd pod serves on `live`
        kubectl_apply(
            world,
            {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": "gitops-kd-admission", "namespace": SYSTEM_NS},
                "subsets": [{"addresses": [{"ip": address}], "ports": [{"name": "admission", "port": live}]}],
            },
        )
        wait_for(
            "the caBundle filled in",
            lambda: all(w["clientConfig"].get("caBundle") for w in world.rest.get(*VWC, None, "gitops-kd")["webhooks"]),
            60,
        )
        world.wait_ready_at("1.0.0", timeout=180)
        [sts] = [
            s["metadata"]["name"]
            for s in world.rest.list("apps/v1", "statefulsets", world.ns)["items"]
            if s["metadata"]["labels"][ROLE_LABEL] == "worker"
        ]

        def image() -> str:
            return str(
                world.rest.get("apps/v1", "statefulsets", world.ns, sts)["spec"]["template"]["spec"]["containers"][0]["image"]
            )

        denied = world.kubectl("set", "image", f"statefulset/{sts}", "app=gitops-kd/hello:6.6.6")
        assert denied.returncode != 0
        assert (
            f'admission webhook "{WORKLOADS}" denied the request: StatefulSet {world.ns}/{sts} is managed by '
            "gitops-kd from Git: spec.template.spec.containers[app].image is owned by gitops-kd; change "
            "apps/hello.yaml or clusters/hello-dev.yaml in Git instead."
        ) in denied.stderr, denied.stderr
        assert image() == "gitops-kd/hello:1.0.0"
        assert world.kubectl("label", "statefulset", sts, "team=blue").returncode == 0
        # a KDCluster: stock KubeDirector's own webhook refuses deleting a KDApp clusters use before gitops-kd's
        gone = world.kubectl("delete", "kdcluster", "hello-dev", "--wait=false")
        assert gone.returncode != 0
        assert (
            f'admission webhook "{SPECS}" denied the request: KubeDirectorCluster {world.ns}/hello-dev is managed '
            "by gitops-kd from Git: deleting it is owned by gitops-kd; change clusters/hello-dev.yaml in Git "
            "instead"
        ) in gone.stderr, gone.stderr
        assert world.rest.get("kubedirector.hpe.com/v1beta1", "kubedirectorclusters", world.ns, "hello-dev")
        assert (
            yaml.safe_load(world.kubectl("get", "statefulset", sts, "-o", "yaml").stdout)["metadata"]["labels"]["team"] == "blue"
        )
    finally:
        proc.stop()
