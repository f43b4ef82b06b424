"""What stops a command from reaching the cluster is one line naming it and what to do, exit status 2, never a
traceback (issue 29, 1): a missing kubeconfig file, an unknown context, a file that is not a kubeconfig, an API
server that does not answer, for every command that reads the cluster."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gitops_kd.cli.exits import EXIT_CANNOT_RUN
from tests.review.repos import template_repo

GITOPS_KD = str(Path(sys.executable).parent / "gitops-kd")
READERS = [["status"], ["history", "hello"], ["sync", "--timeout", "5"], ["suspend", "hello-dev"], ["plan"], ["diff"]]


def _kubeconfig(path: Path, server: str) -> Path:
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: "{server}"}}
contexts:
- name: dev
  context: {{cluster: c, user: u}}
current-context: dev
users:
- name: u
  user: {{token: abc}}
""")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [GITOPS_KD, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HOME": str(cwd), **(env or {})},
    )


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == EXIT_CANNOT_RUN, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr.strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return template_repo(tmp_path_factory.mktemp("cli-errors") / "repo")


@pytest.mark.parametrize("args", READERS, ids=lambda a: a[0])
def test_an_api_server_that_does_not_answer_is_one_line(repo: Path, tmp_path: Path, args: list[str]) -> None:
    port = _free_port()
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{port}")
    line = _one_line(_run(repo, *args, "--kubeconfig", str(kubeconfig)))
    assert f"cannot reach the API server at https://127.0.0.1:{port}" in line and "Connection refused" in line, line
    assert "--kubeconfig" in line and "--context" in line, line


def test_a_missing_kubeconfig_file_is_named(repo: Path, tmp_path: Path) -> None:
    line = _one_line(_run(repo, "status", "--kubeconfig", str(tmp_path / "nope/kubeconfig")))
    assert f"--kubeconfig {tmp_path / 'nope/kubeconfig'}: no such file" in line, line
    env_line = _one_line(_run(repo, "status", env={"KUBECONFIG": str(tmp_path / "gone")}))
    assert f"$KUBECONFIG ({tmp_path / 'gone'}): no such file" in env_line, env_line


def test_an_unknown_context_lists_the_contexts(repo: Path, tmp_path: Path) -> None:
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1")
    line = _one_line(_run(repo, "plan", "--kubeconfig", str(kubeconfig), "--context", "nope"))
    assert f'context "nope" does not exist in --kubeconfig {kubeconfig} (its contexts: dev)' in line, line


def test_a_file_that_is_not_a_kubeconfig_says_where(repo: Path, tmp_path: Path) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("clusters: [\n")
    line = _one_line(_run(repo, "diff", "--kubeconfig", str(broken)))
    assert f"--kubeconfig {broken}: not a usable kubeconfig: YAML:" in line and "line 2" in line, line
