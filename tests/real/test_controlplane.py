"""The launcher itself: a child that dies while starting fails the start at once, and nothing is left running."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.real.controlplane import ControlPlane, ControlPlaneError, binaries

pytestmark = pytest.mark.real


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


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
