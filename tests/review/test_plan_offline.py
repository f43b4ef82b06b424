"""`gitops-kd plan --base/--head` without a cluster: the base revision's desired state taken as running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.harness import git
from tests.review.golden import check_golden
from tests.review.repos import catalog_refused_repo, catalog_repo, cli, template_repo


@pytest.fixture
def template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = template_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    return repo


@pytest.mark.parametrize("fmt", ["markdown", "json", "text"])
def test_golden_template_upgrade(template: Path, fmt: str) -> None:
    result = cli("plan", "--base", "main", "--head", "HEAD", "--format", fmt)
    assert result.exit_code == 0, result.stderr
    check_golden(f"plan-template.{ {'markdown': 'md'}.get(fmt, fmt) }", result.stdout)


def test_template_upgrade_facts(template: Path) -> None:
    data = json.loads(cli("plan", "--base", "main", "--head", "HEAD", "--format", "json").stdout)
    assert not data["refused"] and data["replaced"] == 3
    (app,) = data["apps"]
    assert (app["before"], app["after"], app["allowed"]) == ("1.0.0", "2.0.0", True)
    (cluster,) = data["clusters"]
    assert [r["role"] for r in cluster["roles"]] == ["controller", "worker"]
    assert {d["directory"]: d["action"] for d in cluster["roles"][0]["dirs"]} == {
        "/etc": "keep",
        "/opt/hello/cache": "discard",
        "/var/lib/hello": "migrate",
    }
    assert cluster["ports"] == [
        {
            "role": "worker",
            "services": 2,
            "before": [["http-hello-http", 8080]],
            "after": [["http-hello-http", 8081]],
            "members": [1, 0],  # each Service moves with its own member's pod, highest ordinal first
        }
    ]
    # 3 pods x (podReady 300 + migrate 120 + hook 60 + gate 120)
    assert cluster["estimate_seconds"] == data["estimate_seconds"] == 3 * 600


def test_revert_is_a_downgrade_by_the_left_versions_rules(template: Path) -> None:
    result = cli("plan", "--base", "HEAD", "--head", "main")
    assert result.exit_code == 0
    assert "2.0.0 -> 1.0.0 (downgrade): allowed by spec.upgrade.downgrade.to[0] of 2.0.0" in result.stdout
    assert "/var/lib/hello: restore" in result.stdout


def test_no_change_plans_nothing(template: Path) -> None:
    data = json.loads(cli("plan", "--base", "HEAD", "--head", "HEAD", "--format", "json").stdout)
    assert data["replaced"] == 0 and [c["state"] for c in data["clusters"]] == ["in-sync"]


def test_ci_checkout_origin_main_and_detached_head(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a CI job: a clone, origin/main as the base, a detached HEAD no branch of the origin points at."""
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(template), str(clone))
    git(clone, "checkout", "-q", "pr")
    git(clone, "commit", "-q", "--allow-empty", "-m", "merge commit only the CI checkout has")
    git(clone, "checkout", "-q", "--detach")
    monkeypatch.chdir(clone)
    result = cli("plan", "--base", "origin/main", "--head", "HEAD", "--format", "markdown")
    assert result.exit_code == 0, result.stderr
    assert "1.0.0 → 2.0.0 (upgrade)" in result.stdout


def test_invalid_head_exits_1_with_located_errors(template: Path) -> None:
    (template / "apps/hello.yaml").write_text((template / "apps/hello.yaml").read_text().replace("periodSeconds", "periodSecond"))
    git(template, "commit", "-qam", "typo")
    result = cli("plan", "--base", "main", "--head", "HEAD")
    assert result.exit_code == 1
    assert "head HEAD" in result.stderr and "apps/hello.yaml:71:7: spec.upgrade.gate.periodSecond" in result.stderr


def test_usage() -> None:
    assert cli("plan", "--head", "HEAD").exit_code == 2
    assert cli("plan", "--base", "main", "--rev", "HEAD").exit_code == 2


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_golden_catalog(kd_shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    monkeypatch.chdir(catalog_repo(tmp_path / "catalog", kd_shared))
    result = cli("plan", "--base", "main", "--head", "HEAD", "--format", fmt)
    assert result.exit_code == 0, result.stderr
    check_golden(f"plan-catalog.{ {'markdown': 'md'}.get(fmt, fmt) }", result.stdout)


def test_golden_catalog_refused(kd_shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(catalog_refused_repo(tmp_path / "catalog", kd_shared))
    result = cli("plan", "--base", "main", "--head", "HEAD", "--format", "markdown")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[3] == "> [!CAUTION]" and "REFUSED" in lines[4]
    check_golden("plan-catalog-refused.md", result.stdout)


def test_plan_reads_the_checked_out_revision_unless_a_branch_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`plan --offline` in a pull request's checkout plans that checkout, not main's head (issue 29, 5); --branch
    still picks a branch, and a branch that does not exist is named with the ones that do (exit 2)."""
    monkeypatch.chdir(template_repo(tmp_path / "repo"))
    checkout = cli("plan", "--offline")
    assert checkout.exit_code == 0 and "at version 2.0.0" in checkout.stdout, checkout.output
    main = cli("plan", "--offline", "--branch", "main")
    assert main.exit_code == 0 and "at version 1.0.0" in main.stdout, main.output
    missing = cli("plan", "--offline", "--branch", "master")
    assert missing.exit_code == 2 and "branch 'master' not found (its branches: main, pr)" in missing.stderr, missing.output
