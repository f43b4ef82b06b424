"""pods/exec over WebSocket with real kubectl (v5) and the official client's stream() (v4/v5)."""

from __future__ import annotations

import subprocess

import pytest
from kubernetes import client
from kubernetes.stream import stream
from workloads_util import kubectl, statefulset, sts_ready, wait_for

from kdsim.cluster import EmbeddedCluster
from kdsim.images import store_for


@pytest.fixture(scope="module")
def shell_pod(cluster: EmbeddedCluster) -> tuple[str, str]:
    """(namespace, pod) of a running single-container pod of image example.com/tools:2."""
    store_for(cluster).add("example.com/tools:2", {"/etc/tools/motd": "hello from tools\n"})
    apps = client.AppsV1Api(cluster.api_client())
    client.CoreV1Api(cluster.api_client()).create_namespace({"metadata": {"name": "exec"}})
    env = [{"name": "GREETING", "value": "hi"}, {"name": "MY_POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    apps.create_namespaced_stateful_set(
        "exec", statefulset("sh", replicas=1, image="example.com/tools:2", container={"env": env, "workingDir": "/etc/tools"})
    )
    wait_for(sts_ready(apps, "exec", "sh", 1))
    return "exec", "sh-0"


def test_kubectl_exec_stdout_and_exit_code(cluster: EmbeddedCluster, shell_pod: tuple[str, str]) -> None:
    ns, pod = shell_pod
    done = kubectl(cluster, "-n", ns, "exec", pod, "--", "cat", "motd", "/etc/image-ref")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello from tools\nexample.com/tools:2\n"
    failed = kubectl(cluster, "-n", ns, "exec", pod, "--", "sh", "-c", "echo oops >&2; exit 2")
    assert failed.returncode == 2
    assert "oops" in failed.stderr and "command terminated with exit code 2" in failed.stderr


def test_kubectl_exec_stdin(cluster: EmbeddedCluster, shell_pod: tuple[str, str]) -> None:
    ns, pod = shell_pod
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(cluster.kubeconfig), "-n", ns, "exec", "-i", pod, "--", "sh", "-c", "tr a-z A-Z"],
        input="shout\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "SHOUT\n"


def test_stream_env_hostname_and_exit_code(cluster: EmbeddedCluster, shell_pod: tuple[str, str]) -> None:
    ns, pod = shell_pod
    core = client.CoreV1Api(cluster.api_client())
    echo = "echo $GREETING $MY_POD $(hostname) $PWD $KUBERNETES_SERVICE_PORT"
    out = stream(
        core.connect_get_namespaced_pod_exec,
        pod,
        ns,
        command=["sh", "-c", echo],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
    )
    assert out == "hi sh-0 sh-0 /etc/tools 443\n"
    ws = stream(
        core.connect_get_namespaced_pod_exec,
        pod,
        ns,
        command=["sh", "-c", "echo out; echo err >&2; exit 5"],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
        _preload_content=False,
    )
    ws.run_forever(timeout=20)
    assert ws.read_stdout() == "out\n" and ws.read_stderr() == "err\n"
    assert ws.returncode == 5


def test_stream_stdin_roundtrip(cluster: EmbeddedCluster, shell_pod: tuple[str, str]) -> None:
    ns, pod = shell_pod
    core = client.CoreV1Api(cluster.api_client())
    ws = stream(
        core.connect_get_namespaced_pod_exec,
        pod,
        ns,
        command=["sh", "-c", "read line; echo got:$line"],
        stderr=True,
        stdin=True,
        stdout=True,
        tty=False,
        _preload_content=False,
    )
    ws.write_stdin("ping\n")
    ws.run_forever(timeout=20)
    assert ws.read_stdout() == "got:ping\n"
    assert ws.returncode == 0


def test_exec_errors_worded_like_the_apiserver(cluster: EmbeddedCluster, shell_pod: tuple[str, str]) -> None:
    ns, pod = shell_pod
    missing = kubectl(cluster, "-n", ns, "exec", "nope-0", "--", "true")
    assert missing.returncode != 0 and 'pods "nope-0" not found' in missing.stderr
    wrong = kubectl(cluster, "-n", ns, "exec", pod, "-c", "sidecar", "--", "true")
    assert wrong.returncode != 0 and "container sidecar is not valid for pod sh-0" in wrong.stderr
    absent = kubectl(cluster, "-n", ns, "exec", pod, "--", "no-such-binary")
    assert absent.returncode == 127


def test_lost_fault_runs_the_command_then_drops_the_connection(cluster: EmbeddedCluster, shell_pod: tuple[str, str]) -> None:
    """Fault "lost" on pods/exec: the command runs to its end, then the connection drops before its output and exit
    status (the client sees the connection lost, never an exit code)."""
    ns, pod = shell_pod
    core = client.CoreV1Api(cluster.api_client())
    cluster.faults.lose_next(1, verb="*", resource="pods/exec")
    ws = stream(
        core.connect_get_namespaced_pod_exec,
        pod,
        ns,
        command=["sh", "-c", "echo ran > /tmp/lost; echo out"],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
        _preload_content=False,
    )
    with pytest.raises(Exception, match="Connection to remote host was lost"):
        while ws.is_open():
            ws.update(timeout=5)
    assert ws.read_stdout() == "" and cluster.faults.rules() == []
    ran = stream(
        core.connect_get_namespaced_pod_exec,
        pod,
        ns,
        command=["cat", "/tmp/lost"],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
    )
    assert ran == "ran\n"
