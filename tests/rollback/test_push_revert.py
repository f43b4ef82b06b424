"""push_revert against real Git repos: the revert commit's parent, message, sign-off; lease; no double push."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitops_kd.source import GitSource
from gitops_kd.source.revert import RevertError, push_revert, push_revert_result
from tests.rollback.gitrepo import commit_files, git, init_pushable


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    repo = init_pushable(tmp_path / "remote")
    commit_files(repo, {"apps/a.yaml": "version: 1\n"}, "a 1")
    return repo


def test_revert_is_pushed_on_top_of_the_branch_with_signoff(remote: Path, tmp_path: Path) -> None:
    bad = commit_files(remote, {"apps/a.yaml": "version: 2\n"}, "a 2")
    with GitSource(f"file://{remote}", "main", tmp_path / "cache") as source:
        sha = push_revert(source, bad, message="pod a-0 never became Ready")
        assert git(remote, "rev-parse", "main") == sha
        assert git(remote, "rev-parse", f"{sha}^") == bad
        body = git(remote, "show", "-s", "--format=%B", sha)
        assert body.splitlines()[0] == 'Revert "a 2"'
        assert "pod a-0 never became Ready" in body
        assert f"This reverts commit {bad}." in body
        assert body.rstrip().splitlines()[-1] == "Signed-off-by: gitops-kd <gitops-kd@localhost>"
        assert git(remote, "show", "-s", "--format=%an <%ae>|%cn", sha) == "gitops-kd <gitops-kd@localhost>|gitops-kd"
        assert (remote / "apps/a.yaml").read_text() == "version: 1\n"  # tree of the revert = before the bad commit
        assert source.resolve("main") == sha  # the clone was fetched after the push
        # no temporary worktree left behind
        assert git(remote, "log", "--oneline").count("\n") == 2
        assert "worktree" not in git(Path(source.cache_dir / "repo.git"), "worktree", "list").split()[-1]


def test_never_pushes_twice_for_the_same_commit(remote: Path, tmp_path: Path) -> None:
    bad = commit_files(remote, {"apps/a.yaml": "version: 2\n"}, "a 2")
    with GitSource(f"file://{remote}", "main", tmp_path / "cache") as source:
        first = push_revert_result(source, bad)
        commit_files(remote, {"clusters/c.yaml": "x: 1\n"}, "unrelated")
        again = push_revert_result(source, bad)
    assert first.pushed and not again.pushed and again.sha == first.sha
    assert git(remote, "log", "--format=%s").splitlines() == ["unrelated", 'Revert "a 2"', "a 2", "a 1"]


def test_branch_moved_since_the_last_poll_reverts_on_the_new_head(remote: Path, tmp_path: Path) -> None:
    bad = commit_files(remote, {"apps/a.yaml": "version: 2\n"}, "a 2")
    with GitSource(f"file://{remote}", "main", tmp_path / "cache") as source:
        source.poll()
        other = commit_files(remote, {"clusters/c.yaml": "x: 1\n"}, "someone else")
        sha = push_revert(source, bad)
    assert git(remote, "rev-parse", f"{sha}^") == other


def test_lease_refuses_a_push_over_a_moved_branch_then_retries_once(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit lands between the revert being made and pushed: the lease refuses, the retry succeeds."""
    import gitops_kd.source.revert as revert

    bad = commit_files(remote, {"apps/a.yaml": "version: 2\n"}, "a 2")
    real = revert._make_revert
    raced: list[str] = []

    def racing(*args: object) -> str:
        sha = real(*args)  # type: ignore[arg-type]
        if not raced:
            raced.append(commit_files(remote, {"clusters/c.yaml": "x: 1\n"}, "racing commit"))
        return sha

    monkeypatch.setattr(revert, "_make_revert", racing)
    with GitSource(f"file://{remote}", "main", tmp_path / "cache") as source:
        sha = push_revert(source, bad)
    assert git(remote, "rev-parse", f"{sha}^") == raced[0]
    assert git(remote, "log", "--format=%s").splitlines() == ['Revert "a 2"', "racing commit", "a 2", "a 1"]


def test_conflicting_revert_is_refused_and_nothing_pushed(remote: Path, tmp_path: Path) -> None:
    bad = commit_files(remote, {"apps/a.yaml": "version: 2\n"}, "a 2")
    head = commit_files(remote, {"apps/a.yaml": "version: 3\n"}, "a 3")
    with GitSource(f"file://{remote}", "main", tmp_path / "cache") as source:
        with pytest.raises(RevertError, match="failed"):
            push_revert(source, bad)
    assert git(remote, "rev-parse", "main") == head


def test_commit_not_on_the_branch_is_refused(remote: Path, tmp_path: Path) -> None:
    git(remote, "checkout", "-q", "-b", "side")
    side = commit_files(remote, {"apps/a.yaml": "version: 9\n"}, "side")
    git(remote, "checkout", "-q", "main")
    with GitSource(f"file://{remote}", "main", tmp_path / "cache") as source:
        with pytest.raises(RevertError, match="not on branch main"):
            push_revert(source, side)
