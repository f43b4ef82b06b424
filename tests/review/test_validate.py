"""`gitops-kd validate`: the same errors the Git source refuses a commit with, located, in three formats."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gitops_kd.cli.problems import as_dict
from gitops_kd.source import GitSource, SourceError
from gitops_kd.spec import FieldError
from tests.badinput.test_bad_commits import CASES as E2E_CASES
from tests.e2e.harness import make_repo
from tests.review.golden import check_golden
from tests.review.repos import cli, commit_all
from tests.source.conftest import WorkRepo, app_yaml, cluster_yaml
from tests.source.test_refusals import CASES as SOURCE_CASES


def source_errors(repo: Path) -> tuple[FieldError, ...]:
    """What the Git source says about the repository's HEAD."""
    with GitSource(repo.as_uri(), "main") as source:
        try:
            source.desired_at("HEAD")
        except SourceError as exc:
            return exc.errors
    return ()


def validated(*args: str) -> tuple[int, list[dict[str, object]]]:
    result = cli("validate", "--format", "json", *args)
    return result.exit_code, json.loads(result.stdout)["errors"]


def assert_same_as_source(repo: Path, monkeypatch: pytest.MonkeyPatch) -> list[FieldError]:
    """validate --repo and validate PATH report exactly the source's errors (with their positions)."""
    errors = source_errors(repo)
    assert errors, "the case must be refused by the source"
    want = [as_dict(e) for e in errors]
    assert validated("--repo", str(repo), "--rev", "HEAD") == (1, want)
    monkeypatch.chdir(repo)
    assert validated(".") == (1, want)
    return list(errors)


def work_repo(tmp: Path) -> WorkRepo:
    """The repository tests/source/conftest.py's `repo` fixture builds."""
    work = WorkRepo(tmp / "origin")
    work.write("apps/hello.yaml", app_yaml("hello"))
    work.write("clusters/hello-dev.yaml", cluster_yaml("hello-dev", "hello"))
    work.write("README.md", "# specs\n")
    work.write("examples/hello-2.0.0.yaml", app_yaml("hello", "2.0.0"))
    work.commit("initial")
    return work


@pytest.mark.parametrize("case", sorted(SOURCE_CASES))
def test_every_source_refusal_case(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = work_repo(tmp_path)
    named = SOURCE_CASES[case](work)
    work.commit(case)
    errors = assert_same_as_source(work.path, monkeypatch)
    assert any(named in str(e) for e in errors)


@pytest.mark.parametrize("case", list(E2E_CASES))
def test_every_bad_commit_case(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    change, expected = E2E_CASES[case]
    repo = make_repo(tmp_path / "repo")
    change(repo)
    commit_all(repo, case)
    assert_same_as_source(repo, monkeypatch)
    text = cli("validate", ".").stdout
    for piece in expected:
        assert piece in text, f"{case}: {piece!r} not in {text!r}"


def test_located_errors_point_at_the_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    hello2 = (repo / "examples/hello-2.0.0.yaml").read_text()
    (repo / "apps/hello.yaml").write_text(hello2.replace("periodSeconds", "periodSecond"))
    monkeypatch.chdir(repo)
    result = cli("validate", "apps/hello.yaml")
    line = next(i for i, t in enumerate(hello2.splitlines(), 1) if "periodSeconds" in t)
    column = hello2.splitlines()[line - 1].index("periodSeconds") + 1
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == (
        f'apps/hello.yaml:{line}:{column}: spec.upgrade.gate.periodSecond: unknown field "periodSecond"'
    )


def test_a_file_is_checked_with_its_whole_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "stray").mkdir()
    (repo / "stray/app.yaml").write_text((repo / "apps/hello.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    for arg in ("repo/stray/app.yaml", "repo/clusters/hello-dev.yaml"):
        result = cli("validate", arg)
        assert result.exit_code == 1
        assert result.stdout.splitlines() == [
            "repo/stray/app.yaml:1:1: manifest outside apps/ and clusters/",
            "repo: refused: 1 error(s) in 1 file(s)",
        ]


def bad_repo(tmp: Path) -> Path:
    """repo-template with four kinds of error: a stanza typo, a YAML syntax error, a symlink, an unknown app."""
    repo = make_repo(tmp / "repo")
    hello2 = (repo / "examples/hello-2.0.0.yaml").read_text()
    (repo / "apps/hello.yaml").write_text(hello2.replace("periodSeconds", "periodSecond"))
    (repo / "apps/broken.yaml").write_text("apiVersion: kubedirector.hpe.com/v1beta1\nkind: [unclosed\n")
    (repo / "clusters/alias.yaml").symlink_to("hello-dev.yaml")
    dev = (repo / "clusters/hello-dev.yaml").read_text()
    (repo / "clusters/orphan.yaml").write_text(
        dev.replace("name: hello-dev", "name: orphan").replace("app: hello", "app: no-such-app")
    )
    commit_all(repo, "four problems")
    return repo


FORMATS: dict[str, Callable[[str], str]] = {"text": lambda s: s, "json": lambda s: s, "github": lambda s: s}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_golden_refused(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = bad_repo(tmp_path)
    by_rev = cli("validate", "--repo", str(repo), "--rev", "HEAD", "--format", fmt)
    monkeypatch.chdir(repo.parent)
    by_path = cli("validate", "repo", "--format", fmt)
    assert by_path.exit_code == by_rev.exit_code == 1
    check_golden(f"validate-refused.{fmt}", by_path.stdout)

    def same(out: str) -> str:
        return out.replace(f"{repo}@HEAD", "repo").replace("repo/", "").replace('"commit": null,\n  ', "")

    assert same(by_rev.stdout) == same(by_path.stdout)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_golden_valid_template(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2] / "repo-template")
    result = cli("validate", "--format", fmt)
    assert result.exit_code == 0
    check_golden(f"validate-template.{fmt}", result.stdout)


def test_valid_catalog(kd_shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for sub, target in (("catalog", "apps"), ("clusters", "clusters")):
        (tmp_path / target).mkdir()
        for f in (kd_shared / sub).iterdir():
            (tmp_path / target / f.name).write_bytes(f.read_bytes())
    monkeypatch.chdir(tmp_path)
    refused = cli("validate", "--format", "json")  # KD's example clusters rely on a default StorageClass
    assert refused.exit_code == 1 and {e["field"].rsplit(".", 1)[-1] for e in json.loads(refused.stdout)["errors"]} == {
        "storageClassName"
    }, refused.stdout
    result = cli("validate", "--format", "json", "--default-storage-class")
    assert result.exit_code == 0, result.stdout
    check_golden("validate-catalog.json", result.stdout.replace(os.path.basename(tmp_path), "catalog"))


def test_a_role_storage_without_a_class_is_refused_unless_the_cluster_has_a_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Invariant: validate refuses what KubeDirector refuses on a cluster without a default StorageClass (a role's
    storage without storageClassName), naming file, field and reason, unless the KDCluster's annotation or the
    --default-storage-class flag says the target cluster has a default class."""
    repo = make_repo(tmp_path / "repo")
    path = repo / "clusters" / "hello-dev.yaml"
    path.write_text(path.read_text().replace('gitops-kd.io/default-storage-class: "true"', "team: demo"))
    monkeypatch.chdir(repo)
    code, errors = validated()
    assert code == 1
    assert [(e["file"], e["field"]) for e in errors] == [
        ("clusters/hello-dev.yaml", "spec.roles[0].storage.storageClassName"),
        ("clusters/hello-dev.yaml", "spec.roles[1].storage.storageClassName"),
    ]
    assert all("no default storage class is available." in str(e["reason"]) for e in errors)
    assert validated("--default-storage-class")[0] == 0
    path.write_text(path.read_text().replace("size: 1Gi", "size: 1Gi\n        storageClassName: fast"))
    assert validated()[0] == 0


def test_unreadable_revision_exits_2(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    result = cli("validate", "--repo", str(repo), "--rev", "no-such-rev")
    assert result.exit_code == 2 and "unknown revision" in result.stderr
    assert cli("validate", str(repo), "--repo", str(repo)).exit_code == 2
