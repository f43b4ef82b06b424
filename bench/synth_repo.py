"""Synthetic Git repositories of KDApp specs for the benchmarks, built in one `git fast-import` run."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
BRANCH = "main"
EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z; commit i is EPOCH + i seconds


def app_name(i: int) -> str:
    return f"app-{i:04d}"


def app_path(i: int) -> str:
    return f"apps/{app_name(i)}.yaml"


def app_yaml(name: str, version: str) -> str:
    """A valid two-role KubeDirectorApp (about 900 bytes), shaped like repo-template/apps/hello.yaml."""
    return f"""apiVersion: kubedirector.hpe.com/v1beta1
kind: KubeDirectorApp
metadata:
  name: {name}
spec:
  label:
    name: {name}
    description: synthetic app {name} for the gitops-kd benchmarks
  distroID: bench/{name}
  version: "{version}"
  configSchemaVersion: 8
  defaultImageRepoTag: bench/{name}:{version}
  defaultPersistDirs:
    - /var/lib/{name}
  services:
    - id: http
      label:
        name: HTTP API
      endpoint:
        port: 8080
        urlScheme: http
        path: /
        isDashboard: false
  roles:
    - id: controller
      cardinality: "1"
    - id: worker
      cardinality: "1+"
  config:
    selectedRoles: [controller, worker]
    roleServices:
      - roleID: worker
        serviceIDs: [http]
"""


def version_of(generation: int) -> str:
    return f"1.{generation}.0"


def _data(text: str) -> bytes:
    raw = text.encode()
    return b"data %d\n" % len(raw) + raw + b"\n"


def _commit_header(mark: int, message: str, parent: str | None) -> bytes:
    out = b"commit refs/heads/%s\nmark :%d\n" % (BRANCH.encode(), mark)
    out += b"committer bench <bench@example.com> %d +0000\n" % (EPOCH + mark)
    out += _data(message)
    if parent is not None:
        out += b"from %s\n" % parent.encode()
    return out


def _modify(path: str, text: str) -> bytes:
    return b"M 100644 inline %s\n" % path.encode() + _data(text)


def history_stream(apps: int, commits: int) -> Iterator[bytes]:
    """Commit 1 adds `apps` app files; each later commit bumps the version of one app, round robin."""
    first = _commit_header(1, f"add {apps} apps", None)
    yield first + b"".join(_modify(app_path(i), app_yaml(app_name(i), version_of(0))) for i in range(apps))
    for n in range(2, commits + 1):
        i = (n - 2) % apps
        generation = (n - 2) // apps + 1
        yield (
            _commit_header(n, f"bump {app_name(i)} to {version_of(generation)}", f":{n - 1}")
            + _modify(app_path(i), app_yaml(app_name(i), version_of(generation)))
        )


def fast_import(repo: Path, chunks: Iterator[bytes]) -> None:
    """Feed a fast-import stream into the bare repository `repo`."""
    proc = subprocess.Popen(
        ["git", "-C", str(repo), "fast-import", "--quiet", "--done"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **GIT_ENV},
    )
    assert proc.stdin is not None
    for chunk in chunks:
        proc.stdin.write(chunk)
    proc.stdin.write(b"done\n")
    proc.stdin.close()
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.wait() != 0:
        raise RuntimeError(f"git fast-import into {repo} failed: {err.strip()}")


def build_repo(path: Path, apps: int, commits: int) -> Path:
    """A bare repo at `path` with `apps` KDApp files and `commits` commits on branch main."""
    if commits < 1 or apps < 1:
        raise ValueError("build_repo: apps and commits must be at least 1")
    fast_import(init_bare(path), history_stream(apps, commits))
    return path


def commit_count(repo: Path) -> int:
    out = subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--count", BRANCH],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    ).stdout
    return int(out.strip())


def head(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", BRANCH], check=True, capture_output=True, text=True, env={**os.environ, **GIT_ENV}
    ).stdout.strip()


def commit_files(repo: Path, files: dict[str, str], message: str) -> str:
    """Add one commit on main writing `files` (path -> text) over the current head (if any); returns it."""
    has_head = (
        subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", BRANCH],
            capture_output=True,
            env={**os.environ, **GIT_ENV},
        ).returncode
        == 0
    )
    header = b"commit refs/heads/%s\n" % BRANCH.encode()
    header += b"committer bench <bench@example.com> %d +0000\n" % (EPOCH + 10_000_000)
    header += _data(message)
    if has_head:
        header += b"from %s\n" % head(repo).encode()
    fast_import(repo, iter([header + b"".join(_modify(p, t) for p, t in sorted(files.items()))]))
    return head(repo)


def init_bare(path: Path) -> Path:
    """An empty bare repository at `path` (branch main)."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "init", "-q", "--bare", "-b", BRANCH, str(path)], check=True, capture_output=True, env={**os.environ, **GIT_ENV}
    )
    return path


def change_one_app(repo: Path, index: int, version: str) -> str:
    """Add one commit on main that rewrites app `index` at `version`; returns the new head."""
    return commit_files(repo, {app_path(index): app_yaml(app_name(index), version)}, f"bump {app_name(index)} to {version}")
