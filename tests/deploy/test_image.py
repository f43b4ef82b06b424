"""The production image holds the controller only: no emulator code, and the CLI works without it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[2]


def _copied_sources() -> list[str]:
    """The sources deploy/Dockerfile copies into the build (COPY <src>... <dest>)."""
    sources: list[str] = []
    for line in (ROOT / "deploy" / "Dockerfile").read_text().splitlines():
        if m := re.match(r"COPY\s+(.+)\s+\S+$", line.strip()):
            sources.extend(m.group(1).split())
    return sources


def test_the_image_build_finds_no_emulator_package(tmp_path: Path) -> None:
    sources = _copied_sources()
    assert "gitops_kd" in sources and not any(s.startswith(("kdsim", "tests", ".")) for s in sources)
    for src in sources:
        (shutil.copytree if (ROOT / src).is_dir() else shutil.copy)(ROOT / src, tmp_path / src)
    include = tomllib.loads((tmp_path / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    found = find_packages(str(tmp_path), include=include["include"])
    assert {"gitops_kd", "gitops_kd.controller", "kubeplumb", "kdcrds"} <= set(found)
    assert not [p for p in found if p.split(".")[0] not in ("gitops_kd", "kubeplumb", "kdcrds")]


_WITHOUT_KDSIM = (
    "import sys; sys.modules['kdsim'] = None; from gitops_kd.cli import main; sys.argv = ['gitops-kd', *sys.argv[1:]]; main()"
)


def test_the_cli_runs_without_the_emulator_and_says_what_is_missing(tmp_path: Path) -> None:
    ok = subprocess.run([sys.executable, "-c", _WITHOUT_KDSIM, "--help"], capture_output=True, text=True)
    assert ok.returncode == 0 and "run" in ok.stdout
    sim = subprocess.run(
        [sys.executable, "-c", _WITHOUT_KDSIM, "sim", "serve", "--state-dir", str(tmp_path / "s")], capture_output=True, text=True
    )
    assert sim.returncode == 2  # could not do it (gitops_kd/cli/exits.py)
    assert "the embedded cluster (package kdsim) is not installed" in sim.stderr
    assert "Traceback" not in sim.stderr
