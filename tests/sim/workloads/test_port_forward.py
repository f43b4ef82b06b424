"""kubectl port-forward with the oldest kubectl (1.27: SPDY/3.1) and the newest (1.33: SPDY tunnelled in a
WebSocket): a round trip to an HTTP server running in the pod, and the kubelet's error when nothing listens."""

from __future__ import annotations

import re
import socket
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from workloads_util import TRANSPORT, UPGRADED, sdk_kubectl, wait_for

from kdsim.cluster import EmbeddedCluster
from tests.kubectl_matrix import SDK


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def served_in_pod(cluster: EmbeddedCluster, ns: str, pod: str, port: int) -> Iterator[None]:
    """`python3 -m http.server PORT` run in the pod (by kubectl exec) over a directory of the pod's own rootfs."""
    made = sdk_kubectl(cluster, "1.33", "-n", ns, "exec", pod, "--", "sh", "-c",
                       "mkdir -p /srv/www && echo served from the pod > /srv/www/index.html")
    assert made.returncode == 0, made.stderr
    server = subprocess.Popen([str(SDK / "kubectl.1.33"), "--kubeconfig", str(cluster.kubeconfig), "-n", ns, "exec",
                               pod, "--", "python3", "-m", "http.server", str(port), "--bind", "127.0.0.1",
                               "--directory", "/srv/www"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: listening(port), 30, f"the pod's server on port {port}")
        yield
    finally:
        server.kill()  # the kubelet stops the command when its exec stream goes away
        server.wait(10)


@contextmanager
def forwarding(cluster: EmbeddedCluster, version: str, ns: str, pod: str, port: int) -> Iterator[tuple[int, list[str]]]:
    """`kubectl port-forward pod :PORT`; (the local port it listens on, its log lines so far)."""
    proc = subprocess.Popen([str(SDK / f"kubectl.{version}"), "--kubeconfig", str(cluster.kubeconfig), "-v=6",
                             "-n", ns, "port-forward", f"pod/{pod}", f":{port}"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    log: list[str] = []
    assert proc.stderr is not None and proc.stdout is not None
    threading.Thread(target=lambda: log.extend(proc.stderr or ()), daemon=True).start()
    try:
        first = proc.stdout.readline()  # "Forwarding from 127.0.0.1:LOCAL -> PORT" once the stream is up
        found = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)", first)
        assert found and int(found.group(2)) == port, (first, log)
        threading.Thread(target=lambda: log.extend(proc.stdout or ()), daemon=True).start()
        yield int(found.group(1)), log
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_port_forward_round_trip(cluster: EmbeddedCluster, tools_pod: tuple[str, str], version: str) -> None:
    ns, pod = tools_pod
    port = free_port()
    with served_in_pod(cluster, ns, pod, port), forwarding(cluster, version, ns, pod, port) as (local, log):
        for _ in range(2):  # two connections: two stream pairs on one SPDY connection
            with urllib.request.urlopen(f"http://127.0.0.1:{local}/index.html", timeout=20) as answer:
                assert answer.read() == b"served from the pod\n"
        wait_for(lambda: sum("Handling connection for" in line for line in log) == 2, 10, "two handled connections")
        assert UPGRADED.findall("".join(log)) == [TRANSPORT[version]], log


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_port_forward_to_a_port_nothing_listens_on(cluster: EmbeddedCluster, tools_pod: tuple[str, str],
                                                   version: str) -> None:
    ns, pod = tools_pod
    port = free_port()
    with forwarding(cluster, version, ns, pod, port) as (local, log):
        with socket.create_connection(("127.0.0.1", local), timeout=20) as conn:
            conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
            assert conn.recv(100) == b""  # the data stream ends with nothing forwarded
        text = wait_for(lambda: "".join(log) if "an error occurred forwarding" in "".join(log) else "", 20,
                        "kubectl's report of the kubelet's error").replace('\\"', '"')  # 1.33 logs it quoted
    assert (f'error forwarding port {port} to pod ' in text and f'failed to execute portforward in network namespace '
            f'"host": failed to connect to localhost:{port} inside namespace ' in text)
    assert f"IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused" in text
