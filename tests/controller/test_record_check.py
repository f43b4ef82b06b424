"""controller/record_check.py against a real Git repository: which records are adopted, which are distrusted."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitops_kd.controller.record_check import ClusterCommit, check_record, cluster_commits
from gitops_kd.source.gitrepo import GitCache
from gitops_kd.status.source import SourceRecord
from tests.e2e.harness import git

BOGUS = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture()
def history(tmp_path: Path) -> tuple[GitCache, list[str]]:
    """A repository with three commits on main (oldest first), and a cache that fetched it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shas = []
    for n in range(3):
        (repo / "f.txt").write_text(f"{n}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"c{n}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    cache = GitCache(str(repo), tmp_path / "cache.git")
    cache.fetch()
    return cache, shas


def rec(applied: str, baseline: str) -> SourceRecord:
    return SourceRecord(url="u", branch="main", applied=applied, baseline=baseline)


def shown(*shas: str) -> tuple[ClusterCommit, ...]:
    return tuple(ClusterCommit(s, f"KDRollout default/c{i} status.commit") for i, s in enumerate(shas))


def test_a_record_that_contains_what_the_cluster_shows_is_adopted(history: tuple[GitCache, list[str]]) -> None:
    git_, (c0, c1, _c2) = history
    verdict = check_record(git_, rec(c1, c1), shown(c0, c1), allow_force_push=False)
    assert (verdict.applied, verdict.baseline, verdict.problem) == (c1, c1, "")


def test_a_record_older_than_a_rollout_is_distrusted(history: tuple[GitCache, list[str]]) -> None:
    git_, (c0, c1, _c2) = history
    verdict = check_record(git_, rec(c0, c0), shown(c1), allow_force_push=False)
    assert "newer than the recorded" in verdict.problem and c1[:12] in verdict.problem
    # an older applied commit with a baseline that no repository has is no way around it
    assert "newer than the recorded" in check_record(git_, rec(c0, BOGUS), shown(c1), allow_force_push=False).problem


def test_an_applied_commit_not_in_git_or_off_the_baseline_is_distrusted(
    history: tuple[GitCache, list[str]], tmp_path: Path
) -> None:
    git_, (c0, c1, _c2) = history
    assert "is not a commit of" in check_record(git_, rec(BOGUS, c1), (), allow_force_push=False).problem
    repo = tmp_path / "repo"  # a commit on a side branch from c0: neither it nor c1 descends from the other
    git(repo, "checkout", "-q", "-b", "side", c0)
    (repo / "f.txt").write_text("side\n")
    git(repo, "commit", "-q", "-am", "side")
    side = git(repo, "rev-parse", "HEAD")
    git_.fetch()
    verdict = check_record(git_, rec(c1, side), (), allow_force_push=False)
    assert f"forcePushBaseline {side[:12]} does not descend from lastAppliedRevision {c1[:12]}" in verdict.problem


def test_a_baseline_behind_the_applied_commit_is_lifted_to_it(history: tuple[GitCache, list[str]]) -> None:
    """Invariant: a record can never be distrusted forever for a state the controller itself wrote (before 64fbf8d
    a takeover could record a commit and then write the older baseline back): on one line of history the baseline
    becomes the applied commit, so a head that drops it is refused; every other check still runs."""
    git_, (c0, c1, c2) = history
    verdict = check_record(git_, rec(c2, c0), shown(c0, c1), allow_force_push=False)
    assert (verdict.applied, verdict.baseline, verdict.problem) == (c2, c2, "")
    assert "newer than the recorded" in check_record(git_, rec(c1, c0), shown(c2), allow_force_push=False).problem


def test_an_empty_record_takes_the_newest_rollout_commit_as_baseline(history: tuple[GitCache, list[str]]) -> None:
    git_, (c0, c1, _c2) = history
    assert check_record(git_, None, shown(c1, c0), allow_force_push=False).baseline == c1
    # a rollout commit rewritten away from Git: it is the baseline, so every head is refused until one is set again
    assert check_record(git_, None, shown(c1, BOGUS), allow_force_push=False).baseline == BOGUS
    assert check_record(git_, None, (), allow_force_push=False).baseline is None


def test_cluster_commits_reads_attempt_sync_and_history() -> None:
    raw = {
        "metadata": {"namespace": "ns", "name": "c"},
        "status": {"commit": "a", "syncedCommit": "b", "history": [{"commit": "c"}, {"version": "1"}]},
    }
    assert [c.sha for c in cluster_commits([raw])] == ["a", "b", "c"]
