"""The at-most-once wrapper script, run by a real /bin/sh: done -> skipped, started-not-done -> refused."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gitops_kd.execute.steps import ALREADY_DONE, INTERRUPTED, WRAPPER, marker_path


def run(marker: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", "-c", WRAPPER, "step", str(marker), *argv], capture_output=True, text=True, timeout=10)


def test_runs_once_then_reports_done(tmp_path: Path) -> None:
    log = tmp_path / "log"
    marker = tmp_path / "steps" / "uid-2.0.0_pod-0_hook"
    cmd = ("/bin/sh", "-c", f"echo ran >> {log}; echo out")
    first = run(marker, *cmd)
    assert first.returncode == 0 and first.stdout == "out\n"
    second = run(marker, *cmd)
    assert second.returncode == ALREADY_DONE
    assert log.read_text() == "ran\n"


def test_failed_or_interrupted_step_is_never_rerun(tmp_path: Path) -> None:
    log = tmp_path / "log"
    marker = tmp_path / "steps" / "m"
    failed = run(marker, "/bin/sh", "-c", f"echo ran >> {log}; exit 7")
    assert failed.returncode == 7
    again = run(marker, "/bin/sh", "-c", f"echo ran >> {log}")
    assert again.returncode == INTERRUPTED and "did not finish" in again.stderr
    assert log.read_text() == "ran\n"


def test_marker_path_is_safe() -> None:
    assert (
        marker_path("u-1", "2.0.0/kdss-x-0/migrate//var/lib/hello")
        == "/var/lib/gitops-kd/steps/u-1-2.0.0_kdss-x-0_migrate_var_lib_hello"
    )
