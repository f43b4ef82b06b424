"""Git repos for the review tests: base on ``main``, the change on branch ``pr`` checked out detached."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from gitops_kd.cli import main
from tests.e2e.harness import TEMPLATE, git


def cli(*args: str) -> Result:
    """Run `gitops-kd ARGS` in-process; stdout and stderr apart."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def start(repo: Path) -> Path:
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "pr")
    return repo


def finish(repo: Path, message: str) -> Path:
    """Commit the change on ``pr`` and detach HEAD there (as a CI checkout of a pull request is)."""
    commit_all(repo, message)
    git(repo, "checkout", "-q", "--detach")
    return repo


def template_repo(path: Path) -> Path:
    """repo-template at hello 1.0.0 on main; HEAD: apps/hello.yaml replaced by examples/hello-2.0.0.yaml."""
    shutil.copytree(TEMPLATE, path)
    start(path)
    shutil.copy(path / "examples/hello-2.0.0.yaml", path / "apps/hello.yaml")
    return finish(path, "hello 2.0.0")


def _edit_json(path: Path, change: Any) -> None:
    body = json.loads(path.read_text())
    change(body["spec"])
    path.write_text(json.dumps(body, indent=2) + "\n")


def _cassandra(spec: dict[str, Any]) -> None:
    spec["version"] = "3.3"
    spec["defaultImageRepoTag"] += "-3.3"
    spec["upgrade"] = {
        "roleOrder": ["worker", "seed"],
        "from": [
            {
                "versions": ">=3.2 <3.3",
                "default": "keep",
                "persistDirs": {
                    "/var/log/cassandra": "discard",
                    "/var/lib/cassandra": {"migrate": {"command": ["nodetool", "upgradesstables"], "timeoutSeconds": 900}},
                },
            }
        ],
        "hooks": {"postUpgrade": {"command": ["nodetool", "status"], "roles": ["seed"]}},
        "gate": {"httpGet": {"path": "/health", "port": 9042}, "periodSeconds": 10, "timeoutSeconds": 300},
        "podReadyTimeoutSeconds": 900,
        "failurePolicy": "revert-commit",
    }


def _kafka(spec: dict[str, Any]) -> None:
    spec["version"] = "2.0"
    spec["defaultImageRepoTag"] = "bluedata/kafka:2.0"


def _centos(spec: dict[str, Any]) -> None:
    spec["defaultImageRepoTag"] = "docker.io/bluedata/centos7:4.2"


def catalog_repo(path: Path, kd_shared: Path) -> Path:
    """KubeDirector's example apps and clusters on main; HEAD: cassandra 3.2 -> 3.3 with a full stanza,
    centos7 rebuilt on a new image at the same version."""
    (path / "apps").mkdir(parents=True)
    (path / "clusters").mkdir()
    for f in sorted((kd_shared / "catalog").iterdir()):
        shutil.copy(f, path / "apps" / f.name)
    for f in sorted((kd_shared / "clusters").iterdir()):
        shutil.copy(f, path / "clusters" / f.name)
    start(path)
    _edit_json(path / "apps/cr-app-cassandra-3.11.json", _cassandra)
    _edit_json(path / "apps/cr-app-centos7.json", _centos)
    return finish(path, "cassandra 3.3, centos7 rebuild")


def catalog_refused_repo(path: Path, kd_shared: Path) -> Path:
    """The catalog repo with, on top, kafka 1.0 -> 2.0 and no upgrade stanza: refused."""
    catalog_repo(path, kd_shared)
    git(path, "checkout", "-q", "pr")
    _edit_json(path / "apps/cr-app-kafka55.json", _kafka)
    return finish(path, "kafka 2.0")


def run_git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout
