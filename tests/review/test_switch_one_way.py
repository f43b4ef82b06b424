"""A native switch of a KDCluster's spec.app (KubeDirector's live-app-upgrade branch) is said to be one way before
merge: `gitops-kd validate --base` and `gitops-kd plan --base/--head` (text, Markdown PR comment, JSON) warn that
`git revert` rolls it back only until KubeDirector has finished it, quote KubeDirector's refusal after that, and
say what to do instead; the warning never refuses the change, and a stock KubeDirector review has none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.review.repos import cli
from tests.review.test_validate_base import CLUSTER, _app_switched, pr_repo

REFUSAL = "The candidate app version 1.0.0 is not newer than version 2.0.0 that is already running at the current cluster."
BRANCH = ("--kubedirector", "live-app-upgrade")


@pytest.fixture
def switched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = pr_repo(tmp_path, _app_switched)
    monkeypatch.chdir(repo)
    return repo


def _says_one_way(text: str) -> None:
    assert REFUSAL in text, text
    assert "only while KubeDirector's upgrade is in progress" in text, text
    assert "roll forward: commit a new KDApp with a version newer than 2.0.0" in text, text


def test_validate_warns_that_a_native_switch_is_one_way(switched: Path) -> None:
    """Invariant: the warning names the KDCluster's file, line and field, and validate still passes (exit 0)."""
    shown = cli("validate", "--base", "main", *BRANCH)
    assert shown.exit_code == 0, shown.output
    warning = next(line for line in shown.stdout.splitlines() if line.startswith("warning: "))
    assert warning.startswith(f"warning: {CLUSTER}:") and ": spec.app: switching spec.app from hello to hello2" in warning
    _says_one_way(warning)
    data = json.loads(cli("validate", "--base", "main", *BRANCH, "--format", "json").stdout)
    assert data["valid"] is True and [(w["file"], w["field"]) for w in data["warnings"]] == [(CLUSTER, "spec.app")]
    github = cli("validate", "--base", "main", *BRANCH, "--format", "github").stdout
    assert f"::warning file={CLUSTER}," in github
    assert "warning" not in cli("validate", "--base", "main", "--kubedirector", "stock").stdout


def test_plan_base_head_warns_that_a_native_switch_is_one_way(switched: Path) -> None:
    """Invariant: the PR preview (Markdown), the text review and JSON carry the warning for the switched cluster."""
    md = cli("plan", "--base", "main", "--head", "HEAD", "--format", "markdown", *BRANCH)
    assert md.exit_code == 0, md.output
    line = next(x for x in md.stdout.splitlines() if "One way" in x)
    assert line.startswith("- :warning: **One way:** switching spec.app from hello to hello2"), line
    _says_one_way(line)
    text = cli("plan", "--base", "main", "--head", "HEAD", *BRANCH)
    assert text.exit_code == 0, text.output
    _says_one_way(next(x for x in text.stdout.splitlines() if "WARNING, one way" in x))
    data = json.loads(cli("plan", "--base", "main", "--head", "HEAD", "--format", "json", *BRANCH).stdout)
    _says_one_way(next(c for c in data["clusters"] if c["key"] == "default/hello-dev")["rollback"]["one_way"])
