"""Every kind of bad commit is refused whole: errors name the file, the last good state is kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gitops_kd.source import MAX_FILE_BYTES, GitSource, SourceError

from .conftest import WorkRepo, app_yaml, cluster_yaml

HELLO = ("default", "hello")


def _malformed_yaml(repo: WorkRepo) -> str:
    repo.write("apps/broken.yaml", "apiVersion: kubedirector.hpe.com/v1beta1\nkind: [unclosed\n")
    return "apps/broken.yaml"


def _schema_error(repo: WorkRepo) -> str:
    repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0").replace("  roles:\n", "  rolez:\n"))
    return "apps/hello.yaml"


def _duplicate_app(repo: WorkRepo) -> str:
    repo.write("apps/copy/hello-again.yaml", app_yaml("hello", "3.0.0"))
    return "apps/copy/hello-again.yaml"


def _duplicate_after_default_namespace(repo: WorkRepo) -> str:
    repo.write("apps/zz-hello.yaml", app_yaml("hello", "3.0.0", namespace="default"))
    return "apps/zz-hello.yaml"


def _manifest_outside(repo: WorkRepo) -> str:
    repo.write("stray/app.yaml", app_yaml("stray"))
    return "stray/app.yaml"


def _symlink_escaping(repo: WorkRepo) -> str:
    repo.symlink("apps/passwd.yaml", "../../../../etc/passwd")
    return "apps/passwd.yaml"


def _symlink_inside(repo: WorkRepo) -> str:
    repo.symlink("clusters/alias.yaml", "hello-dev.yaml")
    return "clusters/alias.yaml"


def _oversized(repo: WorkRepo) -> str:
    body = app_yaml("big") + "# " + "x" * (MAX_FILE_BYTES + 10) + "\n"
    repo.write("apps/big.yaml", body)
    return "apps/big.yaml"


def _cluster_missing_app(repo: WorkRepo) -> str:
    repo.write("clusters/orphan.yaml", cluster_yaml("orphan", "no-such-app"))
    return "clusters/orphan.yaml"


CASES: dict[str, Callable[[WorkRepo], str]] = {
    "malformed-yaml": _malformed_yaml,
    "schema-error": _schema_error,
    "duplicate-app": _duplicate_app,
    "duplicate-after-default-namespace": _duplicate_after_default_namespace,
    "manifest-outside": _manifest_outside,
    "symlink-escaping": _symlink_escaping,
    "symlink-inside": _symlink_inside,
    "oversized": _oversized,
    "cluster-missing-app": _cluster_missing_app,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_commit_refused_whole_and_last_good_kept(case: str, repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        good = source.poll()
        assert good.accepted
        source.mark_applied(good.commit)
        # a good change rides along in the bad commit: it must not be applied either
        repo.write("clusters/hello-dev.yaml", cluster_yaml("hello-dev", "hello", members=3))
        named = CASES[case](repo)
        bad_commit = repo.commit(case)

        result = source.poll()
        assert result.commit == bad_commit and result.changed and not result.accepted
        assert result.errors, "a refused commit carries its errors"
        assert any(named in str(err) for err in result.errors), [str(e) for e in result.errors]
        assert result.desired == good.desired and source.last_good == good.desired
        assert source.applied_commit == good.commit
        with pytest.raises(SourceError) as info:
            source.desired_at(bad_commit)
        assert info.value.errors == result.errors

        # fixing the repo is accepted again
        repo.git("revert", "--no-edit", "HEAD")
        fixed = source.poll()
        assert fixed.accepted and fixed.desired.apps[HELLO].version == "1.0.0"


def test_all_errors_of_a_commit_are_reported(repo: WorkRepo, tmp_path: Path) -> None:
    _malformed_yaml(repo)
    _manifest_outside(repo)
    _symlink_escaping(repo)
    repo.commit("three problems")
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        result = source.poll()
        assert not result.accepted and result.desired is None
        files = {err.file for err in result.errors}
        assert {"apps/broken.yaml", "stray/app.yaml", "apps/passwd.yaml"} <= files


def test_symlink_reasons(repo: WorkRepo, tmp_path: Path) -> None:
    _symlink_escaping(repo)
    _symlink_inside(repo)
    repo.commit("links")
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        reasons = {err.file: err.reason for err in source.poll().errors}
        assert "leaves the repository" in reasons["apps/passwd.yaml"]
        assert "symlinks are not allowed" in reasons["clusters/alias.yaml"]
