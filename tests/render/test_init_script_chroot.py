"""The init script inside the embedded kubelet's container runner (chroot with the host's /usr, /bin bound
read-only, PVC mounted at /mnt), as the init container runs it: first start, then an upgrade."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gitops_kd.render.init_script import INIT_SCRIPT, dirs_env
from kdsim.kubelet.runner import ContainerProcess, Mount, isolation_available, run

pytestmark = pytest.mark.skipif(not isolation_available(), reason="mount namespaces are not available here")


def image(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def init(tmp: Path, image_root: Path, pvc: Path, env: dict[str, str], name: str):
    rootfs = tmp / f"rootfs-{name}"
    shutil.copytree(image_root, rootfs, symlinks=True)
    proc = ContainerProcess(
        rootfs=rootfs,
        argv=("/bin/sh", "-c", INIT_SCRIPT),
        env={"PATH": "/usr/bin:/bin", **env},
        mounts=(Mount(pvc, "/mnt"),),
        image_root=image_root,
    )
    return run(proc, timeout=60)


def test_first_start_and_upgrade_in_a_container(tmp_path: Path) -> None:
    v1 = image(tmp_path / "v1", {"etc/hello/conf": "1\n", "var/lib/hello/data": "seed 1\n", "opt/c/x": "c1\n"})
    v2 = image(tmp_path / "v2", {"etc/hello/conf": "2\n", "var/lib/hello/data": "seed 2\n", "opt/c/y": "c2\n"})
    pvc = tmp_path / "pvc"
    pvc.mkdir()
    dirs = [("/etc", "keep"), ("/var/lib/hello", "keep"), ("/opt/c", "keep"), ("/usr/local", "keep")]
    res = init(tmp_path, v1, pvc, {"GITOPS_KD_VERSION": "1.0.0", "GITOPS_KD_DIRS": dirs_env(dirs)}, "a")
    assert res.exit_code == 0, res.stderr.decode()
    assert (pvc / "etc/hello/conf").read_text() == "1\n" and (pvc / "etc/kubedirector.init").exists()
    assert (pvc / "usr/local").is_dir() and not any((pvc / "usr/local").iterdir())  # read-only host bind pruned
    (pvc / "var/lib/hello/data").write_text("user\n")
    up = [("/etc", "keep"), ("/var/lib/hello", "migrate"), ("/opt/c", "discard")]
    res = init(
        tmp_path, v2, pvc, {"GITOPS_KD_VERSION": "2.0.0", "GITOPS_KD_FROM_VERSION": "1.0.0", "GITOPS_KD_DIRS": dirs_env(up)}, "b"
    )
    assert res.exit_code == 0, res.stderr.decode()
    assert (pvc / "var/lib/hello/data").read_text() == "seed 2\n"
    assert (pvc / ".gitops-kd/old/var/lib/hello/data").read_text() == "user\n"
    assert sorted(p.name for p in (pvc / "opt/c").iterdir()) == ["y"]
    assert (pvc / "etc/hello/conf").read_text() == "1\n"
    assert (pvc / ".gitops-kd/version").read_text() == "2.0.0\n"
