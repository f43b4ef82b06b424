"""scripts/bootstrap checks the system tools of what is being set up: the demo needs git (and Python) only, the
tests also kubectl and gpg (issue 29, 4: the README said the demo needs Python and git, then it stopped on
kubectl and gpg)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.e2e.harness import ROOT


def _path_with(tmp: Path, *tools: str) -> str:
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for tool in tools:
        found = shutil.which(tool)
        assert found is not None, tool
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_demo_bootstrap_needs_git_only_and_tests_name_what_is_missing(tmp_path: Path) -> None:
    env = {"PATH": _path_with(tmp_path, "git", "dirname", "python3", "id", "touch"), "HOME": str(tmp_path)}
    bash = shutil.which("bash") or "/bin/bash"
    demo = subprocess.run(
        [bash, str(ROOT / "scripts/bootstrap"), "--demo"], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert demo.returncode == 0, demo.stderr
    tests = subprocess.run(
        [bash, str(ROOT / "scripts/bootstrap")], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert tests.returncode == 1 and "missing system tools: kubectl gpg bash" in tests.stderr, tests.stderr
