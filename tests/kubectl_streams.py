"""Streaming kubectl commands (exec, port-forward) with a given kubectl version, shared by the embedded-node
tests and the `sim node` tests: which transport kubectl upgraded with, a server run in a pod, a port-forward."""

from __future__ import annotations

import http.client
import re
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from gitops_kd.testing import wait_for

SDK = Path("/usr/lib/google-cloud-sdk/bin")  # google-cloud-sdk's kubectl packages: kubectl.1.27 ... kubectl.1.33

# the method of the request kubectl -v=6 logs as "101 Switching Protocols": POST is SPDY/3.1, GET a WebSocket
UPGRADED = re.compile(r"\b(POST|GET)\b[^\n]*?/(?:exec|portforward)\b[^\n]*?101 Switching Protocols")
TRANSPORT = {"1.27": "POST", "1.33": "GET"}  # the oldest kubectl here speaks SPDY, the newest WebSocket first


def kubectl_path(version: str) -> str:
    path = SDK / f"kubectl.{version}"
    if not path.exists():
        raise AssertionError(f"{path} is missing: the tests need kubectl {version} (google-cloud-sdk's kubectl packages)")
    return str(path)


def sdk_kubectl(
    kubeconfig: Path, version: str, *args: str, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """kubectl `version` from the SDK's kubectl packages."""
    return subprocess.run(
        [kubectl_path(version), "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def served_in_pod(kubeconfig: Path, ns: str, pod: str, port: int, container: str = "") -> Iterator[None]:
    """`python3 -m http.server PORT` run in the pod (by kubectl exec) over /srv/www of the pod's own rootfs, whose
    index.html says "served from the pod"."""
    pick = ["-c", container] if container else []
    made = sdk_kubectl(
        kubeconfig,
        "1.33",
        "-n",
        ns,
        "exec",
        pod,
        *pick,
        "--",
        "sh",
        "-c",
        "mkdir -p /srv/www && echo served from the pod > /srv/www/index.html",
    )
    assert made.returncode == 0, made.stderr
    server = subprocess.Popen(
        [
            kubectl_path("1.33"),
            "--kubeconfig",
            str(kubeconfig),
            "-n",
            ns,
            "exec",
            pod,
            *pick,
            "--",
            "python3",
            "-m",
            "http.server",
            str(port),
            "--bind",
            "127.0.0.1",
            "--directory",
            "/srv/www",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(f"the pod's server on port {port}", lambda: listening(port), 30)
        yield
    finally:
        server.kill()  # the kubelet stops the command when its exec stream goes away
        server.wait(10)


@contextmanager
def forwarding(kubeconfig: Path, version: str, ns: str, pod: str, port: int) -> Iterator[tuple[int, list[str]]]:
    """`kubectl port-forward pod :PORT` (-v=6); (the local port it listens on, its log lines so far)."""
    proc = subprocess.Popen(
        [kubectl_path(version), "--kubeconfig", str(kubeconfig), "-v=6", "-n", ns, "port-forward", f"pod/{pod}", f":{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
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


def spdy_upgrade(kubeconfig: Path, path: str, protocols: list[str]) -> tuple[int, dict[str, list[str]], bytes]:
    """A SPDY/3.1 upgrade request as kubectl 1.27 sends it, with the kubeconfig's server and credentials;
    (status, headers by lower-cased name, body unless 101)."""
    config = yaml.safe_load(kubeconfig.read_text())
    server = urlsplit(config["clusters"][0]["cluster"]["server"])
    user = config["users"][0]["user"]
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    if user.get("client-certificate"):
        ctx.load_cert_chain(user["client-certificate"], user["client-key"])
    conn = http.client.HTTPSConnection(server.hostname or "", server.port, context=ctx, timeout=30)
    conn.putrequest("POST", path)
    for name, value in (
        ("Connection", "Upgrade"),
        ("Upgrade", "SPDY/3.1"),
        ("Content-Length", "0"),
        *(("X-Stream-Protocol-Version", p) for p in protocols),
    ):
        conn.putheader(name, value)
    if user.get("token"):
        conn.putheader("Authorization", f"Bearer {user['token']}")
    conn.endheaders()
    answer = conn.getresponse()
    body = answer.read() if answer.status != 101 else b""
    headers: dict[str, list[str]] = {}
    for name, value in answer.getheaders():
        headers.setdefault(name.lower(), []).append(value)
    conn.close()
    return answer.status, headers, body
