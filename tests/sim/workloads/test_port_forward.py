"""kubectl port-forward with the oldest kubectl (1.27: SPDY/3.1) and the newest (1.33: SPDY tunnelled in a
WebSocket): a round trip to an HTTP server running in the pod, and the kubelet's error when nothing listens."""

from __future__ import annotations

import socket
import urllib.request

import pytest
from workloads_util import wait_for

from kdsim.cluster import EmbeddedCluster
from tests.kubectl_streams import TRANSPORT, UPGRADED, forwarding, free_port, served_in_pod


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_port_forward_round_trip(cluster: EmbeddedCluster, tools_pod: tuple[str, str], version: str) -> None:
    ns, pod = tools_pod
    port = free_port()
    with served_in_pod(cluster.kubeconfig, ns, pod, port), forwarding(cluster.kubeconfig, version, ns, pod, port) as (local, log):
        for _ in range(2):  # two connections: two stream pairs on one SPDY connection
            with urllib.request.urlopen(f"http://127.0.0.1:{local}/index.html", timeout=20) as answer:
                assert answer.read() == b"served from the pod\n"
        wait_for(lambda: sum("Handling connection for" in line for line in log) == 2, 10, "two handled connections")
        assert UPGRADED.findall("".join(log)) == [TRANSPORT[version]], log


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_port_forward_to_a_port_nothing_listens_on(cluster: EmbeddedCluster, tools_pod: tuple[str, str], version: str) -> None:
    ns, pod = tools_pod
    port = free_port()
    with forwarding(cluster.kubeconfig, version, ns, pod, port) as (local, log):
        with socket.create_connection(("127.0.0.1", local), timeout=20) as conn:
            conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
            try:
                got = conn.recv(100)
            except ConnectionResetError:  # kubectl may close the stream with a reset: it ended all the same
                got = b""
            assert got == b""  # the data stream ends with nothing forwarded
        text = wait_for(
            lambda: "".join(log) if "an error occurred forwarding" in "".join(log) else "",
            20,
            "kubectl's report of the kubelet's error",
        ).replace('\\"', '"')  # 1.33 logs it quoted
    assert (
        f"error forwarding port {port} to pod " in text
        and f'failed to execute portforward in network namespace "host": failed to connect to localhost:{port} inside namespace '
        in text
    )
    assert f"IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused" in text
