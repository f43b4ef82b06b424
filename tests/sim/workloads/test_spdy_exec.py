"""exec and cp with the oldest kubectl (1.27: SPDY/3.1 only) and the newest (1.33: WebSocket v5), each checked
to have upgraded with its own transport; the SPDY handshake's refusals worded as the kubelet words them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kdsim.cluster import EmbeddedCluster
from tests.kubectl_streams import TRANSPORT, UPGRADED, sdk_kubectl, spdy_upgrade


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_exec_streams_and_exit_code(cluster: EmbeddedCluster, tools_pod: tuple[str, str], version: str) -> None:
    ns, pod = tools_pod
    done = sdk_kubectl(
        cluster.kubeconfig, version, "-v=6", "-n", ns, "exec", pod, "--", "sh", "-c", "cat /etc/tools/motd; echo oops >&2; exit 3"
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout == "hello from tools\n"
    assert "oops\n" in done.stderr and "command terminated with exit code 3" in done.stderr
    assert UPGRADED.findall(done.stderr) == [TRANSPORT[version]], done.stderr
    piped = sdk_kubectl(
        cluster.kubeconfig, version, "-n", ns, "exec", "-i", pod, "--", "tr", "a-z", "A-Z", stdin="through stdin\n"
    )
    assert piped.returncode == 0 and piped.stdout == "THROUGH STDIN\n", piped.stderr


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_cp_both_ways(cluster: EmbeddedCluster, tools_pod: tuple[str, str], version: str, tmp_path: Path) -> None:
    ns, pod = tools_pod
    source = tmp_path / "note.txt"
    source.write_bytes(b"copied with " + version.encode() + b"\n" + bytes(range(256)))
    into = sdk_kubectl(cluster.kubeconfig, version, "-n", ns, "cp", str(source), f"{pod}:/tmp/note-{version}")
    assert into.returncode == 0, into.stderr
    listed = sdk_kubectl(cluster.kubeconfig, version, "-n", ns, "exec", pod, "--", "wc", "-c", f"/tmp/note-{version}")
    assert listed.stdout.split()[0] == str(source.stat().st_size), listed.stderr
    back = tmp_path / "back.txt"
    out = sdk_kubectl(cluster.kubeconfig, version, "-n", ns, "cp", f"{pod}:/tmp/note-{version}", str(back))
    assert out.returncode == 0, out.stderr
    assert back.read_bytes() == source.read_bytes()


def test_spdy_handshake_refusals(cluster: EmbeddedCluster, tools_pod: tuple[str, str]) -> None:
    ns, pod = tools_pod
    path = f"/api/v1/namespaces/{ns}/pods/{pod}/exec?command=true&stdout=1"
    status, _, body = spdy_upgrade(cluster.kubeconfig, path, [])
    assert (status, body) == (400, b"unable to upgrade: X-Stream-Protocol-Version is required\n")
    status, headers, body = spdy_upgrade(cluster.kubeconfig, path, ["v9.channel.k8s.io"])
    assert status == 403 and headers["x-accepted-stream-protocol-versions"] == [
        "v4.channel.k8s.io",
        "v3.channel.k8s.io",
        "v2.channel.k8s.io",
        "channel.k8s.io",
    ]
    assert body == (
        b"unable to upgrade: unable to negotiate protocol: client supports [v9.channel.k8s.io], "
        b"server accepts [v4.channel.k8s.io v3.channel.k8s.io v2.channel.k8s.io channel.k8s.io]\n"
    )
    status, headers, _ = spdy_upgrade(cluster.kubeconfig, path, ["v4.channel.k8s.io", "v3.channel.k8s.io"])
    assert status == 101 and headers["upgrade"] == ["SPDY/3.1"]
    assert headers["x-stream-protocol-version"] == ["v4.channel.k8s.io"]
    # a container the pod does not have is refused before any upgrade, as JSON
    status, _, body = spdy_upgrade(cluster.kubeconfig, path + "&container=nope", ["v4.channel.k8s.io"])
    assert status == 400 and b"container nope is not valid for pod sh-0" in body
