"""`gitops-kd sim node` / `sim kubedirector` as real processes joined to an API server, and the checks both
backends share (a pod run on the node; exec and logs through the API server to the node's kubelet endpoint)."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from gitops_kd.testing import pod_ready, wait_for
from kdsim.images import ImageBehavior, ImageStore
from kubeplumb.rest import RestClient
from tests.kubectl_streams import TRANSPORT, UPGRADED, forwarding, free_port, sdk_kubectl, served_in_pod, spdy_upgrade
from tests.real.controlplane import die_with_parent

TOOLS = "example.com/tools:1"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]  # (*args) -> the finished kubectl


class SimProcess:
    """`gitops-kd sim <args>` in its own process group; `banner` is its first stdout line. Stopped by SIGTERM; it
    dies with the test process."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.args, self.log = args, log
        self.proc: subprocess.Popen[str] | None = None
        self.banner = ""

    def __enter__(self) -> SimProcess:
        err = self.log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from gitops_kd.cli import main; main()", "sim", *self.args],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        lines: queue.Queue[str] = queue.Queue()
        out = self.proc.stdout
        assert out is not None
        threading.Thread(target=lambda: [lines.put(line) for line in out], daemon=True).start()
        try:
            self.banner = lines.get(timeout=90).strip()
        except queue.Empty:
            self.stop()
            raise AssertionError(f"gitops-kd sim {self.args[0]} printed nothing in 90s; log:\n{self.log.read_text()}") from None
        return self

    def stop(self) -> int:
        """SIGTERM, wait; the exit code (SIGKILL after 20 s)."""
        assert self.proc is not None
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        return int(self.proc.returncode)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def add_tools_image(state_dir: Path) -> None:
    """The image the checks run, defined in the node's image store before the node starts."""
    ImageStore(state_dir / "images").add(
        TOOLS, {"/etc/tools/motd": "hello from tools\n"}, behavior=ImageBehavior(ready_delay_seconds=0.1)
    )


def node_args(kubeconfig: Path, state_dir: Path, *extra: str) -> list[str]:
    return ["node", "--kubeconfig", str(kubeconfig), "--state-dir", str(state_dir), *extra]


def check_node(rest: RestClient, port: int) -> dict[str, Any]:
    """The Node sim-node registered: Ready, InternalIP 127.0.0.1, the kubelet endpoint's port."""
    node = rest.get("v1", "nodes", None, "sim-node")
    status = node["status"]
    assert {"type": "InternalIP", "address": "127.0.0.1"} in status["addresses"]
    assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] == port
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in status["conditions"])
    return node


def run_pod_checks(rest: RestClient, kubectl: Kubectl, ns: str, while_running: Callable[[], None] | None = None) -> None:
    """A pod with a claim and an init container runs on the node; exec and logs reach it through the API server.
    `while_running` is called while pod `tools` runs (before it is deleted)."""
    rest.create(
        "v1",
        "persistentvolumeclaims",
        ns,
        {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
    )
    rest.create(
        "v1",
        "pods",
        ns,
        {
            "metadata": {"name": "tools"},
            "spec": {
                "initContainers": [
                    {
                        "name": "seed",
                        "image": TOOLS,
                        "command": ["/bin/sh", "-c", "echo seeding; echo seeded > /data/seed"],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    }
                ],
                "containers": [
                    {
                        "name": "app",
                        "image": TOOLS,
                        "command": ["sleep", "infinity"],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    }
                ],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
            },
        },
    )

    def ready() -> dict[str, Any] | None:
        pod = rest.get("v1", "pods", ns, "tools")
        return pod if pod_ready(pod) else None

    pod = wait_for("pod tools Ready", ready, 90)
    assert pod["spec"]["nodeName"] == "sim-node"
    status = pod["status"]
    assert status["phase"] == "Running" and status["hostIP"] == "127.0.0.1"
    assert status["podIP"].startswith("127.") and status["podIP"] != "127.0.0.1"
    app = status["containerStatuses"][0]
    assert app["image"] == TOOLS and app["imageID"].startswith("example.com/tools@sha256:")
    assert app["ready"] is True and "running" in app["state"]
    claim = rest.get("v1", "persistentvolumeclaims", ns, "data")
    assert claim["status"]["phase"] == "Bound" and claim["spec"]["volumeName"]

    done = kubectl("exec", "-n", ns, "tools", "-c", "app", "--", "cat", "/etc/tools/motd", "/data/seed")
    assert done.returncode == 0 and done.stdout == "hello from tools\nseeded\n", done.stderr
    piped = kubectl("exec", "-i", "-n", ns, "tools", "-c", "app", "--", "/bin/sh", "-c", "tr a-z A-Z", stdin="through stdin\n")
    assert piped.stdout == "THROUGH STDIN\n", piped.stderr
    failed = kubectl("exec", "-n", ns, "tools", "-c", "app", "--", "/bin/sh", "-c", "echo oops >&2; exit 3")
    assert failed.returncode == 3 and "oops" in failed.stderr
    logs = kubectl("logs", "-n", ns, "tools", "-c", "seed")
    assert logs.returncode == 0 and logs.stdout == "seeding\n", logs.stderr
    wrong = kubectl("exec", "-n", ns, "tools", "-c", "nope", "--", "true")
    assert wrong.returncode != 0 and "container nope is not valid for pod tools" in wrong.stderr
    if while_running is not None:
        while_running()

    rest.delete("v1", "pods", ns, "tools")
    wait_for(
        "pod tools gone (the kubelet confirmed its deletion)", lambda: rest.get_or_none("v1", "pods", ns, "tools") is None, 60
    )


def streaming_checks(kubeconfig: Path, ns: str, pod: str, container: str, tmp: Path, *, tunnel: bool) -> None:
    """kubectl 1.27's SPDY exec and cp, and port-forward with 1.27 (SPDY) and 1.33, through the API server to the
    node's kubelet endpoint, to a server running in the pod. 1.33 tries the WebSocket tunnel first: an API server
    serving it (`tunnel`: the embedded one) upgrades that, else (kube-apiserver 1.20 passes the WebSocket on to
    the kubelet endpoint, which refuses it) kubectl falls back to SPDY."""
    done = sdk_kubectl(kubeconfig, "1.27", "-v=6", "-n", ns, "exec", pod, "-c", container, "--", "cat", "/etc/tools/motd")
    assert done.returncode == 0 and done.stdout == "hello from tools\n", done.stderr
    assert UPGRADED.findall(done.stderr) == ["POST"], done.stderr
    # a protocol the kubelet does not speak: its refusal, passed back by the API server
    status, headers, body = spdy_upgrade(
        kubeconfig, f"/api/v1/namespaces/{ns}/pods/{pod}/exec?command=true&stdout=1&container={container}", ["v9.channel.k8s.io"]
    )
    assert status == 403 and headers["x-accepted-stream-protocol-versions"] == [
        "v4.channel.k8s.io",
        "v3.channel.k8s.io",
        "v2.channel.k8s.io",
        "channel.k8s.io",
    ], (status, headers)
    assert body.startswith(b"unable to upgrade: unable to negotiate protocol: client supports [v9.channel.k8s.io]")
    note = tmp / "note.txt"
    note.write_text("copied over SPDY\n")
    copied = sdk_kubectl(kubeconfig, "1.27", "-n", ns, "cp", str(note), f"{pod}:/tmp/note.txt", "-c", container)
    assert copied.returncode == 0, copied.stderr
    back = sdk_kubectl(kubeconfig, "1.27", "-n", ns, "exec", pod, "-c", container, "--", "cat", "/tmp/note.txt")
    assert back.stdout == "copied over SPDY\n", back.stderr
    port = free_port()
    with served_in_pod(kubeconfig, ns, pod, port, container):
        for version in ("1.27", "1.33"):
            with forwarding(kubeconfig, version, ns, pod, port) as (local, log):
                with urllib.request.urlopen(f"http://127.0.0.1:{local}/index.html", timeout=20) as answer:
                    assert answer.read() == b"served from the pod\n"
                assert UPGRADED.findall("".join(log)) == [TRANSPORT[version] if tunnel else "POST"], log


def create_centos7(rest: RestClient, kd_shared: Path, ns: str) -> None:
    """KubeDirector's centos7 example app and cluster (one member), created in `ns`."""
    import json

    import yaml

    app = json.loads((kd_shared / "catalog" / "cr-app-centos7.json").read_text())
    rest.create("kubedirector.hpe.com/v1beta1", "kubedirectorapps", ns, app)
    cluster = yaml.safe_load((kd_shared / "clusters" / "cr-cluster-centos7.yaml").read_text())
    rest.create("kubedirector.hpe.com/v1beta1", "kubedirectorclusters", ns, cluster)
