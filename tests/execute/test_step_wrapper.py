"""The at-most-once wrapper script, run by a real /bin/sh: done -> skipped, running -> awaited, started-not-done -> refused."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from gitops_kd.execute.steps import ALREADY_DONE, BEAT_STALE, INTERRUPTED, WRAPPER, marker_path


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


def test_a_step_found_running_is_awaited_not_interrupted(tmp_path: Path) -> None:
    """Invariant: a step whose first run is still going (the exec of a replica that lost its shard runs on in the
    pod) is never run twice and never reported interrupted: the second run waits for it and reports it done."""
    log = tmp_path / "log"
    marker = tmp_path / "steps" / "m"
    argv = ["/bin/sh", "-c", WRAPPER, "step", str(marker), "/bin/sh", "-c", f"sleep 3; echo ran >> {log}"]
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "steps" / "m.started" / "beat").exists():  # the first run has started its command
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        second = run(marker, "/bin/sh", "-c", f"echo ran >> {log}")
        assert second.returncode == ALREADY_DONE, (second.returncode, second.stderr)
        assert "awaiting" in second.stderr
        assert first.wait(10) == 0
    finally:
        if first.poll() is None:
            first.kill()
    assert log.read_text() == "ran\n"


def test_an_awaited_step_that_fails_reports_its_exit_code(tmp_path: Path) -> None:
    marker = tmp_path / "steps" / "m"
    argv = ["/bin/sh", "-c", WRAPPER, "step", str(marker), "/bin/sh", "-c", "sleep 2; exit 5"]
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not (tmp_path / "steps" / "m.started" / "beat").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second = run(marker, "/bin/sh", "-c", "exit 0")
    assert second.returncode == 5 and "failed with exit 5" in second.stderr, second.stderr
    assert first.wait(10) == 5


def test_a_step_whose_runner_died_is_interrupted(tmp_path: Path) -> None:
    """The runner (wrapper and command) killed half way: no heartbeat, no .done -> INTERRUPTED, not run again."""
    log = tmp_path / "log"
    marker = tmp_path / "steps" / "m"
    argv = ["/bin/sh", "-c", WRAPPER, "step", str(marker), "/bin/sh", "-c", f"echo ran >> {log}; sleep 30"]
    first = subprocess.Popen(argv, start_new_session=True)
    deadline = time.monotonic() + 10
    while not (tmp_path / "steps" / "m.started" / "beat").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)
    started = time.monotonic()
    again = subprocess.run(
        ["/bin/sh", "-c", WRAPPER, "step", str(marker), "/bin/sh", "-c", f"echo ran >> {log}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert again.returncode == INTERRUPTED and "did not finish" in again.stderr
    assert time.monotonic() - started < BEAT_STALE + 5
    assert log.read_text() == "ran\n"
