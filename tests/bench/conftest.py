"""Fixtures for the benchmark smoke tests: run a bench script as a subprocess, as a user would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


class BenchRunner:
    """Runs bench/<script> with this interpreter and reads the figures it prints."""

    def call(self, script: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """The finished process of `python bench/<script> ARGS`."""
        return subprocess.run(
            [sys.executable, str(BENCH / script), *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )

    def run(self, script: str, *args: str, timeout: float = 120.0) -> str:
        """stdout of the script; fails the test with its output if it exits non-zero."""
        proc = self.call(script, *args, timeout=timeout)
        assert proc.returncode == 0, f"{script} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        return proc.stdout

    @staticmethod
    def figure(output: str, label: str) -> str:
        """The first word after `label:` on the line starting with label."""
        for line in output.splitlines():
            if line.startswith(label + ":"):
                return line[len(label) + 1 :].split()[0]
        raise AssertionError(f"no line starting with {label!r} in:\n{output}")


@pytest.fixture
def bench() -> BenchRunner:
    return BenchRunner()
