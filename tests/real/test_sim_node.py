"""`gitops-kd sim node` and `sim kubedirector` joined to the real control plane: the Node registers 127.0.0.1
with its kubelet endpoint (serving cert from the cluster CA, clients only with a cert from it), pods run,
and kube-apiserver proxies exec (WebSocket and SPDY), cp, port-forward and logs to that endpoint;
KubeDirector's clusters become StatefulSets that the real StatefulSet controller turns into pods the node runs."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.testing import pod_ready, wait_for
from kubeplumb.rest import RestClient
from tests.real.controlplane import ControlPlane
from tests.simnode import (
    SimProcess,
    add_tools_image,
    check_node,
    create_centos7,
    node_args,
    run_pod_checks,
    streaming_checks,
)

pytestmark = pytest.mark.real
KD = "kubedirector.hpe.com/v1beta1"


@pytest.fixture
def sim_node(real_cp: ControlPlane, tmp_path: Path) -> Iterator[SimProcess]:
    """`gitops-kd sim node` as the admin, with the kubelet serving cert and client CA of the fixture's PKI."""
    assert real_cp.pki is not None
    state = tmp_path / "node"
    add_tools_image(state)
    args = node_args(
        real_cp.kubeconfig,
        state,
        "--tls-cert-file",
        str(real_cp.pki.kubelet_serving.cert),
        "--tls-private-key-file",
        str(real_cp.pki.kubelet_serving.key),
        "--client-ca-file",
        str(real_cp.pki.ca.cert),
    )
    with SimProcess(args, tmp_path / "node.log") as node:
        yield node
        assert node.stop() == 0, (tmp_path / "node.log").read_text()


def test_sim_node_runs_pods_and_serves_exec_and_logs_through_kube_apiserver(
    real_cp: ControlPlane, real_ns: str, real_rest: RestClient, sim_node: SimProcess, tmp_path: Path
) -> None:
    port = int(sim_node.banner.rsplit(":", 1)[1])
    check_node(real_rest, port)
    wait_for(f"the default ServiceAccount in {real_ns}", lambda: real_cp.default_service_account_ready(real_rest, real_ns), 60)

    def kubectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return real_cp.kubectl(*args, stdin=stdin, check=False)

    run_pod_checks(
        real_rest, kubectl, real_ns, lambda: streaming_checks(real_cp.kubeconfig, real_ns, "tools", "app", tmp_path, tunnel=False)
    )


def test_sim_kubedirector_and_node_run_a_kdcluster_with_the_real_statefulset_controller(
    real_cp: ControlPlane, real_ns: str, real_rest: RestClient, sim_node: SimProcess, kd_shared: Path, tmp_path: Path
) -> None:
    wait_for(f"the default ServiceAccount in {real_ns}", lambda: real_cp.default_service_account_ready(real_rest, real_ns), 60)
    with SimProcess(["kubedirector", "--kubeconfig", str(real_cp.kubeconfig)], tmp_path / "kd.log") as kd:
        assert kd.banner == "kubedirector running"
        create_centos7(real_rest, kd_shared, real_ns)

        def configured() -> dict[str, Any] | None:
            status = real_rest.get(KD, "kubedirectorclusters", real_ns, "centos7").get("status") or {}
            return status if status.get("state") == "configured" else None

        status = wait_for("KDCluster centos7 configured", configured, 120)
        member = status["roles"][0]["members"][0]
        pod = real_rest.get("v1", "pods", real_ns, member["pod"])
        assert pod_ready(pod) and pod["spec"]["nodeName"] == "sim-node"
        revision = pod["metadata"]["labels"]["controller-revision-hash"]  # set by the real StatefulSet controller
        assert revision.startswith(status["roles"][0]["statefulSet"] + "-")
        done = real_cp.kubectl("exec", "-n", real_ns, member["pod"], "-c", "app", "--", "cat", "/etc/image-ref", check=False)
        assert done.returncode == 0 and done.stdout == pod["spec"]["containers"][0]["image"] + "\n", done.stderr
        assert kd.stop() == 0, (tmp_path / "kd.log").read_text()
    assert not real_cp.forbidden("system:serviceaccount:kube-system:statefulset-controller", real_ns)
