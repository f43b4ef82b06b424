"""docs/reviewing-an-upgrade.md shows what the commands really print (on repo-template 1.0.0 -> hello 2.0.0)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitops_kd.review.markdown import MARKER
from tests.e2e.harness import ROOT
from tests.review.golden import GOLDEN
from tests.review.repos import cli, template_repo

DOC = (ROOT / "docs/reviewing-an-upgrade.md").read_text()


def block_after(command: str, start: int = 0) -> str:
    """The output lines of the console block whose first line is ``$ command`` (the first after ``start``)."""
    head = f"```console\n$ {command}\n"
    i = DOC.index(head, start) + len(head)
    return DOC[i : DOC.index("```", i)]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = template_repo(tmp_path / "kd-apps")
    monkeypatch.chdir(path)
    return path


def test_pr_comment_is_the_golden_one() -> None:
    start = DOC.index("```markdown\n" + MARKER) + len("```markdown\n")
    assert DOC[start : DOC.index("```", start)] == (GOLDEN / "plan-template.md").read_text()


def test_validate_outputs(repo: Path) -> None:
    assert cli("validate").stdout == block_after("gitops-kd validate")
    hello = repo / "apps/hello.yaml"
    hello.write_text(hello.read_text().replace("periodSeconds", "periodSecond"))
    typo = DOC.index("A typo in the stanza")
    assert cli("validate").stdout == block_after("gitops-kd validate", typo)
    assert cli("validate", "--format", "github").stdout == block_after("gitops-kd validate --format github")


def test_validate_base_output(repo: Path) -> None:
    hello = repo / "apps/hello.yaml"
    hello.write_text(hello.read_text().replace('cardinality: "1+"', 'cardinality: "2+"'))
    assert cli("validate", "--base", "main").stdout == block_after("gitops-kd validate --base main")


def test_revert_output(repo: Path) -> None:
    assert cli("plan", "--base", "HEAD", "--head", "main").stdout == block_after("gitops-kd plan --base HEAD --head main")
