"""`gitops-kd desired show|diff` through click's CliRunner, and scripts/demo-desired as a subprocess."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gitops_kd.cli import main

from .conftest import GIT_ENV, WorkRepo, app_yaml, cluster_yaml

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_show_prints_apps_and_clusters(repo: WorkRepo) -> None:
    code, out, _ = _run("desired", "show", str(repo.path))
    assert code == 0, out
    assert f"commit {repo.git('rev-parse', 'HEAD')}" in out
    hello = next(line for line in out.splitlines() if " hello " in line and "apps/" in line)
    assert "1.0.0" in hello and "apps/hello.yaml" in hello
    dev = next(line for line in out.splitlines() if "hello-dev" in line)
    assert "hello" in dev.replace("hello-dev", "") and "clusters/hello-dev.yaml" in dev


def test_show_at_rev_and_via_url(repo: WorkRepo) -> None:
    first = repo.git("rev-parse", "HEAD")
    repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0"))
    repo.commit("2.0.0")
    code, out, _ = _run("desired", "show", repo.url, "--rev", first[:8])
    assert code == 0 and "1.0.0" in out and "2.0.0" not in out
    code, out, _ = _run("desired", "show", repo.url)
    assert code == 0 and "2.0.0" in out


def test_diff_prints_change_set_and_versions(repo: WorkRepo) -> None:
    repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0", image="docker.io/library/busybox:1.37"))
    repo.write("apps/web.yaml", app_yaml("web", "0.3.0"))
    repo.write("clusters/web-dev.yaml", cluster_yaml("web-dev", "web"))
    repo.remove("clusters/hello-dev.yaml")
    repo.commit("upgrade")
    code, out, _ = _run("desired", "diff", str(repo.path), "HEAD~1", "HEAD")
    assert code == 0, out
    lines = [line.strip() for line in out.splitlines()]
    assert "M apps/hello.yaml" in lines and "A apps/web.yaml" in lines
    # git's rename detection pairs the deleted and the added (similar) cluster files
    assert "R clusters/hello-dev.yaml -> clusters/web-dev.yaml" in lines
    assert "hello: 1.0.0 -> 2.0.0" in lines
    # and every spec field changed, old -> new, right under it
    at = lines.index("hello: 1.0.0 -> 2.0.0")
    assert lines[at + 1 : at + 3] == [
        'spec.version: "1.0.0" -> "2.0.0"',
        'spec.defaultImageRepoTag: "docker.io/library/busybox:1.36" -> "docker.io/library/busybox:1.37"',
    ], out
    assert "web: (new) -> 0.3.0" in lines
    assert "hello-dev: (removed) app hello" in lines and "web-dev: (new) app web" in lines


def test_refused_commit_prints_every_error_and_exits_1(repo: WorkRepo) -> None:
    repo.write("apps/broken.yaml", "kind: [unclosed\n")
    repo.write("stray.yaml", app_yaml("stray"))
    repo.commit("broken")
    code, _, err = _run("desired", "show", str(repo.path))
    assert code == 1
    assert "apps/broken.yaml: " in err and "stray.yaml: manifest outside apps/ and clusters/" in err
    code, _, err = _run("desired", "diff", str(repo.path), "HEAD~1", "HEAD")
    assert code == 1 and "apps/broken.yaml" in err


def test_unknown_revision_exits_2_cannot_read(repo: WorkRepo) -> None:
    code, _, err = _run("desired", "show", str(repo.path), "--rev", "nope")
    assert code == 2 and "unknown revision 'nope'" in err


def _template(base: Path) -> Path:
    base.mkdir()
    for rel, text in {
        "apps/hello.yaml": app_yaml("hello", "1.0.0"),
        "clusters/hello-dev.yaml": cluster_yaml("hello-dev", "hello"),
        "examples/hello-2.0.0.yaml": app_yaml("hello", "2.0.0"),
        "README.md": "# demo\n",
    }.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(text)
    return base


def _demo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run([str(ROOT / "scripts" / "demo-desired"), *args], env=env, capture_output=True, text=True, timeout=120)


def test_demo_script_with_a_template(tmp_path: Path) -> None:
    proc = _demo(str(_template(tmp_path / "template")))
    assert proc.returncode == 0, proc.stderr
    assert "hello: 1.0.0 -> 2.0.0" in proc.stdout
    assert "M apps/hello.yaml" in proc.stdout


def test_demo_script_with_the_repo_template() -> None:
    template = ROOT / "repo-template"
    if not (template / "examples" / "hello-2.0.0.yaml").is_file():
        pytest.skip("repo-template/ is not filled in yet")
    proc = _demo()
    assert proc.returncode == 0, proc.stderr
    assert "hello: 1.0.0 -> 2.0.0" in proc.stdout
