"""On a real API server the controller's Service port patch keeps the nodePort of every port that stays (#18)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import config

from gitops_kd.execute.executor import Executor
from gitops_kd.plan.actions import PatchServicePorts
from kubeplumb.rest import RestClient
from tests.real.controlplane import GITOPS_KD_USER, ControlPlane

pytestmark = pytest.mark.real
SVC = "hello-dev-controller"

REALLOCATES_UP_TO_MINOR = 20  # v1.20.2 reallocates; v1.36.3 keeps (docs/real-control-plane.md)


def _node_ports(rest: RestClient, ns: str) -> dict[str, int]:
    svc = rest.get("v1", "services", ns, SVC)
    return {p["name"]: p["nodePort"] for p in svc["spec"]["ports"]}


def _ports(*specs: tuple[str, int]) -> list[dict[str, Any]]:
    return [{"name": name, "port": port, "protocol": "TCP", "targetPort": port} for name, port in specs]


@pytest.fixture
def node_port_service(real_rest: RestClient, real_ns: str) -> dict[str, int]:
    """A NodePort Service with ports http 8080 and ssh 22, nodePorts allocated by the server."""
    real_rest.create(
        "v1",
        "services",
        real_ns,
        {
            "metadata": {"name": SVC},
            "spec": {"type": "NodePort", "selector": {"app": "hello"}, "ports": _ports(("http", 8080), ("ssh", 22))},
        },
    )
    return _node_ports(real_rest, real_ns)


def test_a_plain_merge_patch_of_spec_ports_reallocates_node_ports_on_1_20_and_keeps_them_on_1_36(
    real_cp: ControlPlane, real_rest: RestClient, real_ns: str, node_port_service: dict[str, int]
) -> None:
    """The server behaviour behind #18: on v1.20.2, ports given without nodePort get new ones, even unchanged ports;
    v1.36.3 gives the unchanged ports their nodePorts back (the two versions run here; the change lies between)."""
    real_rest.patch("v1", "services", real_ns, SVC, {"spec": {"ports": _ports(("http", 8080), ("ssh", 22))}})
    after = _node_ports(real_rest, real_ns)
    if real_cp.minor <= REALLOCATES_UP_TO_MINOR:
        assert after["http"] != node_port_service["http"] and after["ssh"] != node_port_service["ssh"]
    else:
        assert after == node_port_service


def test_the_executor_keeps_node_ports_across_two_port_changes(
    real_cp: ControlPlane, real_rest: RestClient, real_ns: str, node_port_service: dict[str, int], gitops_kd_kubeconfig: Path
) -> None:
    """As the controller runs when deployed: with the gitops-kd ServiceAccount's token and deploy/ RBAC."""
    executor = Executor(config.new_client_from_config(config_file=str(gitops_kd_kubeconfig)))
    try:
        upgrade = PatchServicePorts(real_ns, SVC, tuple(_ports(("http", 8081), ("ssh", 22))))
        assert executor.execute(upgrade).changed
        assert _node_ports(real_rest, real_ns) == node_port_service
        ports = real_rest.get("v1", "services", real_ns, SVC)["spec"]["ports"]
        assert [(p["name"], p["port"]) for p in ports] == [("http", 8081), ("ssh", 22)]

        grow = PatchServicePorts(real_ns, SVC, tuple(_ports(("http", 8081), ("ssh", 22), ("metrics", 9100))))
        assert executor.execute(grow).changed
        after = _node_ports(real_rest, real_ns)
        assert {k: after[k] for k in ("http", "ssh")} == node_port_service
        assert 30000 <= after["metrics"] <= 32767 and after["metrics"] not in node_port_service.values()

        again = executor.execute(grow)
        assert not again.changed and again.message == "ports already up to date"
        assert _node_ports(real_rest, real_ns) == after
    finally:
        executor.close()
    assert real_cp.forbidden(GITOPS_KD_USER, real_ns) == []
