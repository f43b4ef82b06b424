"""Errors a person can act on (issue 44, 4): a file that is not a kubeconfig, a busy --listen port, a 403, an
empty folder given to validate and a name that does not exist are each one line saying what is wrong, with the
exit status every command's --help promises (a table over all commands)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitops_kd.cli import main
from gitops_kd.cli.exits import EXIT_CANNOT_RUN, EXIT_FINDINGS, EXIT_OK
from kdsim.apiserver.faults import FORBIDDEN
from kdsim.cluster import EmbeddedCluster
from tests.kdcluster import embedded_cluster
from tests.review.repos import template_repo

GITOPS_KD = str(Path(sys.executable).parent / "gitops-kd")
FAST = 30.0  # seconds: a refused or impossible command answers well within this (diff/plan retried a 403 for 31 s)


def _run(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [GITOPS_KD, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "HOME": str(cwd), "KUBECONFIG": ""},
    )


def _one_line(done: subprocess.CompletedProcess[str], code: int = EXIT_CANNOT_RUN) -> str:
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    assert lines[0].lower().startswith("error: "), lines
    return lines[0]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return template_repo(tmp_path_factory.mktemp("cli-exits") / "repo")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    sim = embedded_cluster(tmp_path_factory.mktemp("cli-exits-sim")).start()
    try:
        yield sim
    finally:
        sim.stop()


@pytest.mark.parametrize(
    ("content", "what"),
    [
        ("this is not a kubeconfig\n", "the file is a YAML string"),
        ("- a\n- b\n", "the file is a YAML list"),
        ("", "the file is empty"),
        ("kind: Pod\napiVersion: v1\n", "kind is 'Pod', not Config"),
    ],
    ids=["text", "list", "empty", "pod"],
)
def test_a_file_that_is_not_a_kubeconfig_says_what_is_wrong(repo: Path, tmp_path: Path, content: str, what: str) -> None:
    notkube = tmp_path / "notkube.txt"
    notkube.write_text(content)
    line = _one_line(_run(repo, "status", "--kubeconfig", str(notkube)))
    assert f"--kubeconfig {notkube}: not a usable kubeconfig: {what}" in line, line
    assert "object does not support" not in line and "list indices" not in line, line


def test_run_on_a_busy_port_fails_at_once(repo: Path, tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        started = time.monotonic()
        done = _run(repo, "run", "--repo", str(repo), "--listen", f"127.0.0.1:{port}", "--kubeconfig", str(tmp_path / "k"))
        took = time.monotonic() - started
    line = _one_line(done)
    assert f"--listen 127.0.0.1:{port}: cannot listen there (Address already in use)" in line, line
    assert took < FAST, took


READERS = [
    ("plan", ["plan"], 'cannot list resource "statefulsets" in API group "apps" in the namespace "default"'),
    ("diff", ["diff"], 'cannot list resource "statefulsets" in API group "apps" in the namespace "default"'),
    ("status", ["status"], 'cannot list resource "statefulsets" in API group "apps" in the namespace "default"'),
    ("history", ["history", "hello"], 'cannot list resource "kdrollouts"'),
    ("suspend", ["suspend", "hello-dev"], 'cannot list resource "kdrollouts"'),
]


@pytest.mark.parametrize(("name", "args", "names"), READERS, ids=[r[0] for r in READERS])
def test_a_403_names_verb_resource_namespace_and_user_and_is_not_retried(
    repo: Path, cluster: EmbeddedCluster, name: str, args: list[str], names: str
) -> None:
    """Invariant: a 403 is final (retrying cannot help): one line, exit 2, no retry loop, worded the same by every
    command: the server at ..., the status, and the API server's own Status message."""
    cluster.faults.clear()
    plural = "kdrollouts" if "kdrollouts" in names else "statefulsets"
    cluster.faults.add(FORBIDDEN, "list", plural, 1000, user="*")
    try:
        started = time.monotonic()
        done = _run(repo, *args, "--kubeconfig", str(cluster.kubeconfig))
        took = time.monotonic() - started
    finally:
        cluster.faults.clear()
    line = _one_line(done)
    assert re.match(rf"(?i)error: the API server at {re.escape(cluster.url)} refused \(403 Forbidden\): ", line), line
    assert names in line and 'is forbidden: User "' in line and "RBAC" in line, line
    assert "retrying" not in done.stdout + done.stderr and took < FAST, (took, done.stderr)


def test_validate_on_an_empty_folder_outside_git_fails(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    line = _one_line(_run(empty, "validate"))
    assert "not a gitops-kd repository (no apps/ or clusters/ folder, not in a Git work tree)" in line, line


def test_a_name_that_does_not_exist_exits_the_same_everywhere(repo: Path, cluster: EmbeddedCluster) -> None:
    kubeconfig = ["--kubeconfig", str(cluster.kubeconfig)]
    codes = {
        "suspend": _run(repo, "suspend", "nosuch", *kubeconfig).returncode,
        "resume": _run(repo, "resume", "nosuch", *kubeconfig).returncode,
        "history": _run(repo, "history", "nosuch", *kubeconfig).returncode,
        "sync": _run(repo, "sync", "nosuch", "-n", "default", *kubeconfig).returncode,
    }
    assert set(codes.values()) == {EXIT_FINDINGS}, codes


# (command, arguments, expected status, the words of its --help, or of the group's epilog, that promise it)
TABLE = [
    ("validate", [], EXIT_OK, "0 valid"),
    ("validate", ["--repo", ".", "--rev", "nosuch"], EXIT_CANNOT_RUN, "2 when it cannot be read"),
    ("desired", ["show", "."], EXIT_OK, "0 done"),
    ("plan", ["--offline"], EXIT_OK, "0 with a plan"),
    ("plan", ["--rev", "nosuch", "--offline"], EXIT_CANNOT_RUN, "2 when the repository"),
    ("diff", ["@kube"], EXIT_FINDINGS, "1 differences"),
    ("status", ["@kube"], EXIT_OK, "0 when nothing shown is Degraded"),
    ("history", ["nosuch", "@kube"], EXIT_FINDINGS, "1 when no cluster of APP is managed"),
    ("suspend", ["nosuch", "@kube"], EXIT_FINDINGS, "1 done, and the answer is no"),
    ("resume", ["nosuch", "@kube"], EXIT_FINDINGS, "1 done, and the answer is no"),
    ("sync", ["nosuch", "-n", "default", "@kube"], EXIT_FINDINGS, "the GitOpsKDSource does not exist"),
    ("run", ["--listen", "127.0.0.1:-1"], EXIT_CANNOT_RUN, "2 could not do it"),
    ("demo", ["--template", "/nonexistent"], EXIT_CANNOT_RUN, "2 could not do it"),
    ("sim", ["nosuch"], EXIT_CANNOT_RUN, "2 could not do it"),
]


def _help(command: str) -> str:
    done = subprocess.run([GITOPS_KD, command, "--help"], capture_output=True, text=True, timeout=60, check=True)
    return " ".join(done.stdout.split())


def test_every_command_is_in_the_table() -> None:
    assert {row[0] for row in TABLE} == set(main.commands), set(main.commands) ^ {row[0] for row in TABLE}


@pytest.mark.parametrize(("command", "args", "code", "promise"), TABLE, ids=[f"{r[0]}-{r[2]}" for r in TABLE])
def test_exit_status_matches_help(
    repo: Path, cluster: EmbeddedCluster, command: str, args: list[str], code: int, promise: str
) -> None:
    args = [a for arg in args for a in (["--kubeconfig", str(cluster.kubeconfig)] if arg == "@kube" else [arg])]
    done = _run(repo, command, *args)
    assert done.returncode == code, (done.stdout[-2000:], done.stderr[-2000:])
    group = " ".join(main.epilog.split()) if main.epilog else ""
    shown = _help(command)
    assert promise in shown or (promise in group and "Exit status" not in shown), (promise, shown)
