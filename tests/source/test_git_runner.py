"""Every git command of a Git source runs through GitCache.run, in one environment that never prompts."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from gitops_kd.source.gitrepo import GitCache
from tests.source.git_http import HTTP_BACKEND, GitHttpServer


@pytest.mark.skipif(not HTTP_BACKEND.exists(), reason="git http-backend is not installed")
def test_a_credential_prompt_fails_at_once_instead_of_waiting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A desktop's askpass (here one that would hang for a minute) is never asked: push and fetch fail fast."""
    bare = tmp_path / "served" / "specs.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    asked = tmp_path / "asked"
    askpass = tmp_path / "askpass"
    askpass.write_text(f"#!/bin/sh\ntouch {asked}\nsleep 60\n")
    askpass.chmod(0o755)
    for var in ("GIT_ASKPASS", "SSH_ASKPASS"):
        monkeypatch.setenv(var, str(askpass))
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "1")
    with GitHttpServer(bare.parent, "the-token") as server:
        cache = GitCache(f"{server.url}/specs.git", tmp_path / "cache.git", timeout=30)
        started = time.monotonic()
        pushed = cache.run("push", "origin", "HEAD:refs/heads/main")
        listed = cache.run("ls-remote", "origin")
        cache.close()
    assert pushed.returncode != 0 and listed.returncode != 0
    assert "Authentication failed" in listed.stderr or "could not read Username" in listed.stderr
    assert time.monotonic() - started < 20
    assert not asked.exists()
