"""exec and cp with the oldest kubectl (1.27: SPDY/3.1 only) and the newest (1.33: WebSocket v5), each checked
to have upgraded with its own transport; the SPDY handshake's refusals worded as the kubelet words them."""

from __future__ import annotations

import ssl
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from kdsim.cluster import EmbeddedCluster
from tests.kubectl_streams import TRANSPORT, UPGRADED, sdk_kubectl


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_exec_streams_and_exit_code(cluster: EmbeddedCluster, tools_pod: tuple[str, str], version: str) -> None:
    ns, pod = tools_pod
    done = sdk_kubectl(cluster.kubeconfig, version, "-v=6", "-n", ns, "exec", pod, "--", "sh", "-c",
                       "cat /etc/tools/motd; echo oops >&2; exit 3")
    assert done.returncode == 3, done.stderr
    assert done.stdout == "hello from tools\n"
    assert "oops\n" in done.stderr and "command terminated with exit code 3" in done.stderr
    assert UPGRADED.findall(done.stderr) == [TRANSPORT[version]], done.stderr
    piped = sdk_kubectl(cluster.kubeconfig, version, "-n", ns, "exec", "-i", pod, "--", "tr", "a-z", "A-Z",
                        stdin="through stdin\n")
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


def _spdy_post(cluster: EmbeddedCluster, path: str, protocols: list[str]) -> tuple[int, dict[str, list[str]], bytes]:
    """A SPDY/3.1 upgrade request as kubectl 1.27 sends it, over the kubeconfig's TLS; (status, headers, body)."""
    import http.client
    config = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    server = urlsplit(config["clusters"][0]["cluster"]["server"])
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    conn = http.client.HTTPSConnection(server.hostname or "", server.port, context=ctx, timeout=30)
    conn.putrequest("POST", path)
    for name, value in (("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1"), ("Content-Length", "0"),
                        *(("X-Stream-Protocol-Version", p) for p in protocols)):
        conn.putheader(name, value)
    conn.endheaders()
    answer = conn.getresponse()
    body = answer.read() if answer.status != 101 else b""
    headers: dict[str, list[str]] = {}
    for name, value in answer.getheaders():
        headers.setdefault(name.lower(), []).append(value)
    conn.close()
    return answer.status, headers, body


def test_spdy_handshake_refusals(cluster: EmbeddedCluster, tools_pod: tuple[str, str]) -> None:
    ns, pod = tools_pod
    path = f"/api/v1/namespaces/{ns}/pods/{pod}/exec?command=true&stdout=1"
    status, _, body = _spdy_post(cluster, path, [])
    assert (status, body) == (400, b"unable to upgrade: X-Stream-Protocol-Version is required\n")
    status, headers, body = _spdy_post(cluster, path, ["v9.channel.k8s.io"])
    assert status == 403 and headers["x-accepted-stream-protocol-versions"] == [
        "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"]
    assert body == (b"unable to upgrade: unable to negotiate protocol: client supports [v9.channel.k8s.io], "
                    b"server accepts [v4.channel.k8s.io v3.channel.k8s.io v2.channel.k8s.io channel.k8s.io]\n")
    status, headers, _ = _spdy_post(cluster, path, ["v4.channel.k8s.io", "v3.channel.k8s.io"])
    assert status == 101 and headers["upgrade"] == ["SPDY/3.1"]
    assert headers["x-stream-protocol-version"] == ["v4.channel.k8s.io"]
    # a container the pod does not have is refused before any upgrade, as JSON
    status, _, body = _spdy_post(cluster, path + "&container=nope", ["v4.channel.k8s.io"])
    assert status == 400 and b"container nope is not valid for pod sh-0" in body
