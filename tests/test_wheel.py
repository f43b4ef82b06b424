"""The package as a user installs it (issue 44, 1): the wheel built from the tree installs into a clean venv with
its declared dependencies only (no dev tree), and `gitops-kd --version` and a `validate` run work."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

from gitops_kd import __version__
from tests.e2e.harness import ROOT


def _run(*args: str | Path, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False)


def test_the_wheel_installs_into_a_clean_venv_and_runs(tmp_path: Path) -> None:
    built = _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp_path / "dist", ROOT)
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = (tmp_path / "dist").glob("gitops_kd-*.whl")
    assert wheel.name.startswith(f"gitops_kd-{__version__}-"), wheel.name
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    installed = _run(env / "bin/python", "-m", "pip", "install", "-q", wheel)
    assert installed.returncode == 0, installed.stderr[-3000:]
    version = _run(env / "bin/gitops-kd", "--version", cwd=tmp_path)
    assert version.returncode == 0 and __version__ in version.stdout, version.stdout + version.stderr
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "repo-template", repo)
    valid = _run(env / "bin/gitops-kd", "validate", cwd=repo)
    assert valid.returncode == 0 and "valid: 1 app(s), 1 cluster(s)" in valid.stdout, valid.stdout + valid.stderr
