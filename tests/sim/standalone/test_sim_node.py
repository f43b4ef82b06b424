"""`gitops-kd sim node` and `sim kubedirector` joined to a second embedded cluster started with --no-controllers,
the stand-in for a foreign API server: the node registers on 127.0.0.1 with its kubelet endpoint, runs pods,
and exec, cp, port-forward and logs go API server -> kubelet endpoint (the API server has no kubelet in process),
over WebSocket and over SPDY (kubectl 1.27)."""

from __future__ import annotations

import json
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import config

from gitops_kd.testing import wait_for
from kdcrds import kubedirector_crds
from kubeplumb.rest import RestClient
from tests.simnode import SimProcess, add_tools_image, check_node, create_centos7, node_args, run_pod_checks, streaming_checks

KD = "kubedirector.hpe.com/v1beta1"


@pytest.fixture
def foreign(tmp_path: Path) -> Iterator[tuple[Path, RestClient]]:
    """`gitops-kd sim serve --no-controllers` in its own process: an API server with no kubelet, no KubeDirector
    and no StatefulSet controller."""
    kubeconfig = tmp_path / "cluster.kubeconfig"
    with SimProcess(
        ["serve", "--state-dir", str(tmp_path / "cluster"), "--no-controllers", "--kubeconfig", str(kubeconfig)],
        tmp_path / "serve.log",
    ) as serve:
        assert serve.banner.startswith("API server: https://127.0.0.1:"), serve.banner
        wait_for("the kubeconfig written", kubeconfig.is_file, 30)
        yield kubeconfig, RestClient(config.new_client_from_config(config_file=str(kubeconfig)))
        assert serve.stop() == 0, (tmp_path / "serve.log").read_text()


def test_sim_node_joins_an_api_server_without_a_kubelet(tmp_path: Path, foreign: tuple[Path, RestClient]) -> None:
    kubeconfig, rest = foreign
    state = tmp_path / "node"
    add_tools_image(state)
    with SimProcess(node_args(kubeconfig, state), tmp_path / "node.log") as node:
        assert node.banner.startswith("node sim-node registered; kubelet endpoint: https://127.0.0.1:"), node.banner
        port = int(node.banner.rsplit(":", 1)[1])
        check_node(rest, port)
        # the kubelet endpoint itself: its paths, a self-signed serving cert (no --tls-cert-file given)
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=insecure, timeout=10) as answer:
            assert answer.read() == b"ok"
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"https://127.0.0.1:{port}/containerLogs/default/nope/app", context=insecure, timeout=10)
        assert missing.value.code == 404 and json.loads(missing.value.read())["reason"] == "NotFound"

        def kubectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["kubectl", "--kubeconfig", str(kubeconfig), *args], input=stdin, capture_output=True, text=True, timeout=60
            )

        def kubelet_paths() -> None:  # /run and /pods, straight to the kubelet endpoint
            run = urllib.request.Request(
                f"https://127.0.0.1:{port}/run/default/tools/app?cmd=cat%20/etc/tools/motd", method="POST"
            )
            with urllib.request.urlopen(run, context=insecure, timeout=30) as answer:
                assert answer.read() == b"hello from tools\n"
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/pods", context=insecure, timeout=10) as answer:
                listed = json.loads(answer.read())
            assert listed["kind"] == "PodList" and [p["metadata"]["name"] for p in listed["items"]] == ["tools"]
            streaming_checks(kubeconfig, "default", "tools", "app", tmp_path, tunnel=True)

        run_pod_checks(rest, kubectl, "default", kubelet_paths)
        assert node.stop() == 0, (tmp_path / "node.log").read_text()
    # with no kubelet behind the Node any more, the API server says it cannot reach it
    rest.create(
        "v1",
        "pods",
        "default",
        {
            "metadata": {"name": "orphan"},
            "spec": {"nodeName": "sim-node", "containers": [{"name": "app", "image": "example.com/tools:1"}]},
        },
    )
    gone = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "logs", "orphan"], capture_output=True, text=True, timeout=60
    )
    assert gone.returncode != 0 and "error dialing backend" in gone.stderr


def test_sim_node_serves_only_the_client_ca_it_is_given(tmp_path: Path, foreign: tuple[Path, RestClient]) -> None:
    """--client-ca-file: a client without a cert from that CA (here: the embedded API server, which presents
    none) is refused at the TLS handshake, so logs through the API server fail."""
    kubeconfig, rest = foreign
    from kdsim.apiserver import tls

    ca = tls.generate(common_name="some-other-ca")
    (tmp_path / "ca.crt").write_bytes(ca.ca_cert)
    with SimProcess(
        node_args(kubeconfig, tmp_path / "node", "--client-ca-file", str(tmp_path / "ca.crt")), tmp_path / "node.log"
    ) as node:
        port = int(node.banner.rsplit(":", 1)[1])
        check_node(rest, port)
        rest.create(
            "v1",
            "pods",
            "default",
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "image": "example.com/tools:1"}]}},
        )
        wait_for(
            "pod p Running", lambda: (rest.get("v1", "pods", "default", "p").get("status") or {}).get("phase") == "Running", 60
        )
        refused = subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), "logs", "p"], capture_output=True, text=True, timeout=60
        )
        assert refused.returncode != 0 and "error dialing backend" in refused.stderr


def test_sim_kubedirector_reconciles_on_a_foreign_api_server(
    tmp_path: Path, kd_shared: Path, foreign: tuple[Path, RestClient]
) -> None:
    """The KubeDirector sim creates a cluster's StatefulSets and Services there, as in the embedded cluster."""
    kubeconfig, rest = foreign
    with SimProcess(["kubedirector", "--kubeconfig", str(kubeconfig)], tmp_path / "kd.log") as kd:
        assert kd.banner == "kubedirector running"
        assert {c["metadata"]["name"] for c in kubedirector_crds()} <= {
            c["metadata"]["name"] for c in rest.list("apiextensions.k8s.io/v1", "customresourcedefinitions")["items"]
        }
        create_centos7(rest, kd_shared, "default")

        def created() -> dict | None:
            status = rest.get(KD, "kubedirectorclusters", "default", "centos7").get("status") or {}
            sts = ((status.get("roles") or [{}])[0]).get("statefulSet")
            return status if sts and status.get("clusterService") else None

        status = wait_for("KDCluster centos7 with its StatefulSet and cluster Service", created, 60)
        sts = rest.get("apps/v1", "statefulsets", "default", status["roles"][0]["statefulSet"])
        assert sts["metadata"]["labels"]["kubedirector.hpe.com/kdcluster"] == "centos7"
        assert sts["metadata"]["ownerReferences"][0]["kind"] == "KubeDirectorCluster"
        assert rest.get("v1", "services", "default", status["clusterService"])["spec"]["clusterIP"] == "None"
        assert kd.stop() == 0, (tmp_path / "kd.log").read_text()
