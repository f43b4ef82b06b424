"""The CI workflow of repo-template and the pre-commit hook: their gitops-kd steps run as written."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from gitops_kd.review.markdown import MARKER
from tests.e2e.harness import ROOT, TEMPLATE, git
from tests.review.repos import template_repo

WORKFLOW = TEMPLATE / ".github/workflows/gitops-kd.yaml"


def steps() -> dict[str, dict[str, Any]]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as true
    (job,) = workflow["jobs"].values()
    return {s.get("name", s.get("uses", "")): s for s in job["steps"]}


def step_process(script: str, cwd: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    """Run a step's `run:` script as the runner does (bash -e), gitops-kd on PATH, the base branch main."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(tmp / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp / "summary"),
    }
    script = script.replace("${{ github.base_ref }}", "main")
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def run_step(script: str, cwd: Path, tmp: Path) -> tuple[int, dict[str, str]]:
    """step_process; returns (status, outputs)."""
    output = tmp / "output"
    done = step_process(script, cwd, tmp)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines()) if output.exists() else {}
    return done.returncode, outputs


def test_workflow_checks_out_history_and_comments_once() -> None:
    found = steps()
    assert found["actions/checkout@v4"]["with"]["fetch-depth"] == 0
    script = found["Comment on the pull request"]["with"]["script"]
    assert f"const marker = '{MARKER}';" in script and "updateComment" in script and "createComment" in script
    assert "GITOPS_KD_SOURCE" in found["Install gitops-kd"]["run"]


def test_workflow_steps_run_on_a_pull_request_checkout(tmp_path: Path) -> None:
    repo = template_repo(tmp_path / "origin")
    clone = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "checkout", "-q", "--detach", "pr")
    found = steps()
    assert found["Validate"]["run"].startswith("gitops-kd validate --format github --base ")
    assert run_step(found["Validate"]["run"], clone, tmp_path)[0] == 0
    status, outputs = run_step(found["Plan"]["run"], clone, tmp_path)
    assert status == 0 and outputs == {"status": "0"}
    comment = (clone / "plan.md").read_text()
    assert comment.startswith(MARKER + "\n") and "1.0.0 → 2.0.0 (upgrade)" in comment
    assert (tmp_path / "summary").read_text() == comment


def test_workflow_validate_step_refuses_what_kubedirector_refuses_of_the_change(tmp_path: Path) -> None:
    """Invariant: the pull request's Validate step judges the change from the merge base with the target branch as
    stock KubeDirector would (a changed cardinality of a KDApp that the base's cluster uses is refused, naming the
    file and field), and the repository variable GITOPS_KD_KUBEDIRECTOR picks the flavour."""
    repo = template_repo(tmp_path / "origin")
    git(repo, "checkout", "-q", "pr")
    app = repo / "apps/hello.yaml"
    app.write_text(app.read_text().replace('cardinality: "1+"', 'cardinality: "2+"'))
    git(repo, "commit", "-qam", "workers: 2 or more")
    clone = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "checkout", "-q", "--detach", "pr")
    env = yaml.safe_load(WORKFLOW.read_text())["env"]
    assert env["GITOPS_KD_KUBEDIRECTOR"] == "${{ vars.GITOPS_KD_KUBEDIRECTOR || 'stock' }}"
    done = step_process(steps()["Validate"]["run"], clone, tmp_path)
    assert done.returncode == 1, done.stderr
    assert "::error file=apps/hello.yaml," in done.stdout and "spec.roles[worker].cardinality" in done.stdout


def test_workflow_plan_step_reports_invalid_files(tmp_path: Path) -> None:
    repo = template_repo(tmp_path / "origin")
    git(repo, "checkout", "-q", "pr")
    (repo / "apps/hello.yaml").write_text("kind: [unclosed\n")
    git(repo, "commit", "-qam", "broken")
    status, outputs = run_step(steps()["Plan"]["run"], repo, tmp_path)
    assert status == 0 and outputs == {"status": "1"}
    assert (repo / "plan.md").read_text().startswith(MARKER) and "gitops-kd validate" in (repo / "plan.md").read_text()


def test_pre_commit_hook_runs_validate_on_the_whole_tree(tmp_path: Path) -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "gitops-kd-validate" and hook["pass_filenames"] is False and hook["language"] == "python"
    repo = template_repo(tmp_path / "repo")
    argv = [str(Path(sys.executable).parent / "gitops-kd"), *shlex.split(hook["entry"])[1:]]
    assert subprocess.run(argv, cwd=repo, capture_output=True, check=False).returncode == 0
    (repo / "clusters/hello-dev.yaml").write_text("kind: KubeDirectorCluster\n")
    assert subprocess.run(argv, cwd=repo, capture_output=True, check=False).returncode == 1


def test_workflow_plan_step_keeps_a_refusal_and_says_when_it_cannot_plan(tmp_path: Path) -> None:
    """A refused merge (status 1) keeps the review's own [!CAUTION] comment; a base that cannot be read (status 2)
    is said as such, never as invalid files."""
    repo = template_repo(tmp_path / "origin")
    git(repo, "checkout", "-q", "pr")
    hello = (repo / "apps/hello.yaml").read_text()
    (repo / "apps/hello.yaml").write_text(hello.replace('version: "2.0.0"', 'version: "0.9.0"', 1))
    git(repo, "commit", "-qam", "a downgrade no rule allows")
    status, outputs = run_step(steps()["Plan"]["run"], repo, tmp_path)
    comment = (repo / "plan.md").read_text()
    assert status == 0 and outputs == {"status": "1"} and "[!CAUTION]" in comment, comment
    assert "gitops-kd validate" not in comment, comment
    script = steps()["Plan"]["run"].replace('"origin/${{ github.base_ref }}"', "no-such-base")
    status, outputs = run_step(script, repo, tmp_path)
    assert status == 0 and outputs == {"status": "2"}, outputs
    assert "could not plan" in (repo / "plan.md").read_text()
