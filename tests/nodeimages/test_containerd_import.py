"""The archives load into a real containerd (`ctr -n k8s.io image import`, under the names the kubelet asks for) and
hello runs there under runc as a container's PID 1: it answers its version and stops on SIGTERM. A private
containerd (its own root, state and socket in the test's temp folder, no CRI plugin), stopped after."""

from __future__ import annotations

import functools
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitops_kd.testing import wait_for
from tests.nodeimages.facts import containerd_name, hello, images

pytestmark = [
    pytest.mark.backends,
    pytest.mark.skipif(not (shutil.which("containerd") and shutil.which("ctr")), reason="containerd/ctr not installed"),
]
CONFIG = """version = 2
root = "{root}/root"
state = "{root}/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "{root}/containerd.sock"
[ttrpc]
  address = "{root}/containerd.sock.ttrpc"
"""


@pytest.fixture
def ctr(tmp_path: Path) -> Iterator[list[str]]:
    """`ctr` talking to a containerd of this test's own (k8s.io namespace), killed and unmounted afterwards."""
    root = Path(f"/tmp/ctd-{uuid.uuid4().hex[:8]}")  # short: a unix socket path is at most 108 bytes
    root.mkdir()
    (root / "config.toml").write_text(CONFIG.format(root=root))
    log = (tmp_path / "containerd.log").open("w")
    daemon = subprocess.Popen(["containerd", "--config", str(root / "config.toml")], stdout=log, stderr=log)
    command = ["ctr", "--address", str(root / "containerd.sock"), "-n", "k8s.io"]
    try:
        wait_for("containerd serving", lambda: subprocess.run([*command, "version"], capture_output=True).returncode == 0, 30)
        yield command
    finally:
        for task in subprocess.run([*command, "task", "ls", "-q"], capture_output=True, text=True).stdout.split():
            subprocess.run([*command, "task", "kill", "-s", "SIGKILL", task], capture_output=True)
            removed = functools.partial(_removed, command, task)
            wait_for(f"task {task} removed", removed, 10)
        daemon.terminate()
        daemon.wait(30)
        log.close()
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if str(root) in line]
        for mount in sorted(mounts, reverse=True):
            subprocess.run(["umount", mount], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def _removed(command: list[str], task: str) -> bool:
    return subprocess.run([*command, "task", "rm", "-f", task], capture_output=True).returncode == 0


def test_the_archives_import_and_hello_runs_under_runc(built: dict[str, Path], ctr: list[str]) -> None:
    for image in images():
        done = subprocess.run([*ctr, "image", "import", str(built[image.ref])], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    listed = subprocess.run([*ctr, "image", "ls", "-q"], capture_output=True, text=True, timeout=30).stdout.split()
    assert {containerd_name(i.ref) for i in images()} <= set(listed), listed
    image = hello("1.0.0")
    name = f"hello-{uuid.uuid4().hex[:8]}"
    done = subprocess.run([*ctr, "run", "-d", containerd_name(image.ref), name], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (port,) = image.role_ports["worker"]

    def answer() -> str | None:
        got = subprocess.run(
            [*ctr, "task", "exec", "--exec-id", uuid.uuid4().hex[:8], name, "wget", "-q", "-O", "-", f"http://127.0.0.1:{port}/"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return got.stdout if got.returncode == 0 else None

    assert wait_for("hello answering in its container", answer, 30) == "hello 1.0.0\n"
    started = time.monotonic()
    subprocess.run([*ctr, "task", "kill", "-s", "SIGTERM", name], capture_output=True, timeout=30)
    wait_for(
        "hello stopped", lambda: "STOPPED" in subprocess.run([*ctr, "task", "ls"], capture_output=True, text=True).stdout, 10
    )
    assert time.monotonic() - started < 1.0
