"""The launcher itself: a child that dies while starting fails the start at once, and nothing is left running."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gitops_kd.testing import wait_for
from tests.real.controlplane import ROOT, ControlPlane, ControlPlaneError, binaries

pytestmark = pytest.mark.real


def _gone(pid: int) -> bool:
    """No such process, or a zombie (dead, not reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_an_apiserver_that_dies_fails_the_start_with_its_log_and_etcd_is_stopped(tmp_path: Path) -> None:
    cp = ControlPlane(tmp_path, {**binaries(), "kube-apiserver": Path("/bin/false")})
    with pytest.raises(ControlPlaneError, match=r"kube-apiserver exited with 1 while starting; log \S+apiserver.log"):
        with cp:
            pass
    assert cp.procs == [] and set(cp.pids) == {"etcd", "kube-apiserver"}
    assert all(_gone(pid) for pid in cp.pids.values())


def test_the_session_control_plane_runs_each_process_once(real_cp: ControlPlane) -> None:
    assert [p.name for p in real_cp.procs] == ["etcd", "kube-apiserver", "kube-controller-manager"]
    assert all(p.popen.poll() is None for p in real_cp.procs)
    assert 0 < real_cp.start_seconds < 120


def test_a_test_process_killed_outright_leaves_no_etcd_behind(tmp_path: Path) -> None:
    """Teardown never runs for a SIGKILLed test process (a cancelled CI job): its children die with it anyway."""
    etcd = binaries()["etcd"]
    script = (
        "import os, signal, sys, pathlib\n"
        "from tests.real.controlplane import _Process\n"
        f"p = _Process('etcd', [{str(etcd)!r}, '--data-dir', {str(tmp_path / 'etcd')!r}, '--listen-client-urls',"
        f" 'http://127.0.0.1:0', '--advertise-client-urls', 'http://127.0.0.1:2379', '--listen-peer-urls',"
        f" 'http://127.0.0.1:0'], pathlib.Path({str(tmp_path / 'etcd.log')!r}))\n"
        "print(p.popen.pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    child = int(done.stdout.strip())
    wait_for("the etcd of the killed test process gone", lambda: _gone(child), 20)
