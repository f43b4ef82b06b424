"""Helpers for the remote-credentials tests: a served bare repo, a mounted-Secret dir, fake ssh/git, `gitops-kd run`."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

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
    return any(tuple(args[i:i + n]) == pair for i in range(len(args) - n + 1))


class RunProcess:
    """`gitops-kd run` as a subprocess, stdout and stderr going to files in `tmp`."""

    def __init__(self, tmp: Path, repo: str, kubeconfig: Path, *flags: str, path_prefix: Path | None = None) -> None:
        self.out_path, self.err_path = tmp / "run.out", tmp / "run.err"
        env = dict(os.environ)
        if path_prefix is not None:
            env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
        with self.out_path.open("w") as out, self.err_path.open("w") as err:
            self.proc = subprocess.Popen(
                [*CLI, "run", "--repo", repo, "--kubeconfig", str(kubeconfig), "--interval", "0.5",
                 "--listen", "off", "--no-leader-elect", "--cache-dir", str(tmp / "run-cache"),
                 "--log-level", "debug", *flags], stdout=out, stderr=err, env=env, cwd=tmp)

    def output(self) -> str:
        return self.out_path.read_text(errors="replace") + self.err_path.read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
