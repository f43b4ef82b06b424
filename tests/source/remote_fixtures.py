"""Helpers for the remote-credentials tests: a served bare repo, a mounted-Secret dir, fake ssh/git, `gitops-kd run`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from tests.deploy.runner import RunProcess
from tests.e2e.harness import git, make_repo

CLI = [str(Path(sys.executable).parent / "gitops-kd")]


def served_repo(tmp: Path) -> tuple[Path, Path]:
    """(work repo made from repo-template, bare clone of it under tmp/served) — push work to bare to publish."""
    work = make_repo(tmp / "work")
    bare = tmp / "served" / "specs.git"
    bare.parent.mkdir(parents=True)
    git(work, "clone", "-q", "--bare", str(work), str(bare))
    return work, bare


def publish(work: Path, bare: Path, rel: str, text: str) -> None:
    """Commit `text` at `rel` in the work repo and push main to the served bare repo."""
    (work / rel).write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", f"add {rel}")
    git(work, "push", "-q", str(bare), "HEAD:main")


def write_secret(directory: Path, files: dict[str, str], stamp: str) -> None:
    """Write `files` the way the kubelet mounts a Secret: <dir>/..<stamp>/<key>, <dir>/..data -> ..<stamp>,
    <dir>/<key> -> ..data/<key>. Called again with a new stamp it rotates the Secret (swap ..data, drop the old)."""
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / f"..{stamp}"
    data.mkdir()
    for key, text in files.items():
        (data / key).write_text(text)
    link = directory / "..data"
    old = os.readlink(link) if link.is_symlink() else None
    tmp_link = directory / "..data_tmp"
    tmp_link.symlink_to(data.name)
    os.replace(tmp_link, link)
    for key in files:
        if not (directory / key).is_symlink():
            (directory / key).symlink_to(f"..data/{key}")
    if old is not None:
        shutil.rmtree(directory / old)


def fake_ssh(bin_dir: Path, record: Path) -> None:
    """An `ssh` for bin_dir (put first on PATH): appends its argv to `record` (one line each, NUL-separated)
    and runs the remote command it was given (e.g. `git-upload-pack '/path'`) locally with sh -c."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "ssh"
    script.write_text(f"""#!{sys.executable}
import os, sys
with open({str(record)!r}, "a") as f:
    f.write("\\0".join(sys.argv[1:]) + "\\n")
os.execvp("sh", ["sh", "-c", sys.argv[-1]])
""")
    script.chmod(0o755)


def env_recording_git(bin_dir: Path, record: Path) -> None:
    """A `git` for bin_dir (put first on PATH) that appends its whole environment to `record`, then runs git."""
    real = shutil.which("git")
    assert real is not None, "git binary not found"
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "git"
    script.write_text(f"#!/bin/sh\nenv >> '{record}'\nexec '{real}' \"$@\"\n")
    script.chmod(0o755)


def ssh_args(record: Path) -> list[list[str]]:
    """Each recorded ssh invocation's arguments."""
    if not record.exists():
        return []
    return [line.split("\0") for line in record.read_text().splitlines()]


def has_option(args: list[str], *pair: str) -> bool:
    """True if `pair` appears as consecutive arguments (e.g. "-o", "BatchMode=yes")."""
    n = len(pair)
    return any(tuple(args[i : i + n]) == pair for i in range(len(args) - n + 1))


def run_process(tmp: Path, repo: str, kubeconfig: Path, *flags: str, path_prefix: Path | None = None) -> RunProcess:
    """`gitops-kd run` (single replica, debug log) as tests/deploy/runner.RunProcess; `path_prefix` goes first
    on PATH (a recording git or ssh)."""
    env = {"PATH": f"{path_prefix}{os.pathsep}{os.environ.get('PATH', '')}"} if path_prefix is not None else None
    return RunProcess("run", tmp, kubeconfig, repo, "--no-leader-elect", "--log-level", "debug", *flags, env=env)
