"""scripts/test-real (what CI and `scripts/test --real` run): a machine that cannot build the real control plane
fails it loudly, naming the step and its log; it never skips. Runs in the default suite (no build needed)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_failed_build_fails_the_run_naming_the_step_and_its_log(tmp_path: Path) -> None:
    # the download step recorded as done, but no package in it: the unpack step fails (no network touched)
    dl = tmp_path / "gitops-kd" / "realk8s" / "v1.20.2" / "dl"
    dl.mkdir(parents=True)
    (dl / ".done").touch()
    done = subprocess.run(
        [str(ROOT / "scripts" / "test-real")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "realk8s: FAILED at unpack: dpkg-deb -x" in done.stderr
    assert f"realk8s: log: {dl.parent}/logs/unpack.log" in done.stderr
    assert "scripts/test-real: FAILED: could not fetch or build the real control plane" in done.stderr
    assert "pytest --backend=real" not in done.stdout  # stopped before the tests


def test_realkd_without_the_shared_source_fails_naming_what_is_missing(tmp_path: Path) -> None:
    missing = tmp_path / "no-shared" / "realkd"
    done = subprocess.run(
        [str(ROOT / "scripts" / "realkd")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path), "REALKD_SHARED": str(missing)},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"realkd: FAILED: KubeDirector's source archive is missing: {missing}/kubedirector-src.tar.xz" in done.stderr
    assert done.stdout == ""  # no paths printed for the backends to use


def test_realnode_that_cannot_build_the_kubelet_fails_naming_what_it_could_not_get(tmp_path: Path) -> None:
    # a cache without the Kubernetes tree, and realk8s's download recorded as done with nothing in it: the kubelet
    # cannot be built (no network touched)
    dl = tmp_path / "gitops-kd" / "realk8s" / "v1.20.2" / "dl"
    dl.mkdir(parents=True)
    (dl / ".done").touch()
    done = subprocess.run(
        [str(ROOT / "scripts" / "realnode")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "realk8s: FAILED at unpack: dpkg-deb -x" in done.stderr
    assert "realnode: FAILED at kubelet: scripts/realk8s could not provide the v1.20.2 tree and Go 1.15" in done.stderr
    assert done.stdout == ""  # no paths printed for the backends to use


def test_a_current_version_the_module_proxy_cannot_serve_fails_naming_what(tmp_path: Path) -> None:
    """scripts/realk8s VERSION (a current one, from the Go module proxy): with no proxy to ask (GOPROXY=off, so no
    network is touched) it fails at the fetch step, naming the module and version it could not get and its log."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "realk8s"), "v1.36.9"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path), "GOPROXY": "off"},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "realk8s: FAILED at fetch (v1.36.9): the module proxy (off) did not serve k8s.io/kubernetes@v1.36.9" in done.stderr
    assert f"realk8s: log: {tmp_path}/gitops-kd/realk8s/v1.36.9/logs/fetch.log" in done.stderr
    assert done.stdout == ""
