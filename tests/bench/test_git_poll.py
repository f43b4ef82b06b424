"""bench/git_poll.py in a tiny configuration: it runs, and the incremental poll parses only the changed file."""

from __future__ import annotations

from tests.bench.conftest import BenchRunner


def test_git_poll_tiny(bench: BenchRunner) -> None:
    out = bench.run("git_poll.py", "--apps", "5", "--commits", "10", "--repeat", "2")
    assert bench.figure(out, "history") == "10"
    assert bench.figure(out, "files parsed, cold first poll") == "5"
    assert bench.figure(out, "files parsed, incremental poll") == "1"
    # the full re-read parses the applied commit's 5 files plus the changed one of the new head
    assert bench.figure(out, "files parsed, full re-read poll") == "6"
    assert bench.figure(out, "apps in the change set (both)") == "1"
    assert out.index("-- counts") < out.index("-- times")  # machine-independent figures first


def test_git_poll_rejects_bad_arguments(bench: BenchRunner) -> None:
    proc = bench.call("git_poll.py", "--apps", "0")
    assert proc.returncode == 2
    assert "--apps, --commits and --repeat must be at least 1" in proc.stderr
