"""Fixtures for the Git source tests: real git work repos in tmp dirs, file:// and git:// URLs."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def app_yaml(
    name: str, version: str = "1.0.0", *, namespace: str | None = None, image: str = "docker.io/library/busybox:1.36"
) -> str:
    ns = f"\n  namespace: {namespace}" if namespace else ""
    return f"""apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorApp
metadata:
  name: {name}{ns}
spec:
  label:
    name: {name}
  distroID: example/{name}
  version: "{version}"
  configSchemaVersion: 8
  defaultImageRepoTag: {image}
  roles:
  - id: web
    cardinality: "1+"
  config:
    selectedRoles: [web]
    roleServices:
    - roleID: web
      serviceIDs: [http]
  services:
  - id: http
    label:
      name: HTTP
    endpoint:
      port: 8080
      urlScheme: http
"""


def cluster_yaml(name: str, app: str, *, members: int = 1) -> str:
    return f"""apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorCluster
metadata:
  name: {name}
spec:
  app: {app}
  roles:
  - id: web
    members: {members}
    resources:
      requests:
        cpu: "100m"
        memory: 128Mi
      limits:
        cpu: "100m"
        memory: 128Mi
"""


class WorkRepo:
    """A non-bare git repo we commit to with the git binary; `url` is its file:// URL."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")

    @property
    def url(self) -> str:
        return self.path.as_uri()

    def git(self, *args: str) -> str:
        env = {**os.environ, **GIT_ENV}
        return subprocess.run(["git", *args], cwd=self.path, env=env, check=True, capture_output=True, text=True).stdout.strip()

    def write(self, rel: str, text: str | bytes) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text)

    def symlink(self, rel: str, target: str) -> None:
        link = self.path / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)

    def remove(self, rel: str) -> None:
        self.git("rm", "-q", rel)

    def move(self, old: str, new: str) -> None:
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", old, new)

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> WorkRepo:
    """A work repo with apps/hello.yaml (1.0.0), clusters/hello-dev.yaml and a README, committed."""
    work = WorkRepo(tmp_path / "origin")
    work.write("apps/hello.yaml", app_yaml("hello"))
    work.write("clusters/hello-dev.yaml", cluster_yaml("hello-dev", "hello"))
    work.write("README.md", "# specs\n")
    work.write("examples/hello-2.0.0.yaml", app_yaml("hello", "2.0.0"))
    work.commit("initial")
    return work


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def git_daemon(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A real `git daemon` on 127.0.0.1 serving tmp_path/served; yields (base dir, git:// base URL)."""
    if shutil.which("git") is None:
        pytest.skip("git binary not found")
    base = tmp_path / "served"
    base.mkdir()
    port = _free_port()
    proc = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            f"--base-path={base}",
            "--export-all",
            "--listen=127.0.0.1",
            f"--port={port}",
            str(base),
        ],
        env={**os.environ, **GIT_ENV},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 15
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"git daemon exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("git daemon did not accept connections within 15s") from None
                time.sleep(0.05)
        yield base, f"git://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
