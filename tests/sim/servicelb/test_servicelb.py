"""The embedded cluster's load-balancer controller gives LoadBalancer Services a loopback ingress."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest

from kdsim.cluster import EmbeddedCluster
from kubeplumb.rest import RestClient


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(tmp_path_factory.mktemp("lb"), controllers=True) as c:
        yield c


def _ingress(rest: RestClient, name: str) -> list:
    svc = rest.get("v1", "services", "default", name)
    return ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []


def _eventually(probe, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached")


def test_load_balancer_service_gets_and_loses_an_ingress(cluster: EmbeddedCluster) -> None:
    rest = RestClient(cluster.api_client())
    rest.create(
        "v1",
        "services",
        "default",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "ports": [{"port": 8080}]},
        },
    )
    ingress = _eventually(lambda: _ingress(rest, "web"))
    assert ingress[0]["ip"] == "127.0.0.1" and ingress[0]["ports"] == [{"port": 8080, "protocol": "TCP"}]
    shown = subprocess.run(
        ["kubectl", "--kubeconfig", str(cluster.kubeconfig), "get", "svc", "web"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert shown[1].split()[shown[0].split().index("EXTERNAL-IP")] == "127.0.0.1"
    rest.patch("v1", "services", "default", "web", {"spec": {"type": "ClusterIP"}})
    _eventually(lambda: _ingress(rest, "web") == [])
    rest.create(
        "v1",
        "services",
        "default",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "plain"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
        },
    )
    time.sleep(0.3)  # give the controller a chance to (wrongly) act on a ClusterIP Service
    assert _ingress(rest, "plain") == []
