"""Check a GitOpsKDSource record against Git and against the commits the cluster's KDRollouts show."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gitops_kd.rollout.model import RolloutStatus, status_key
from gitops_kd.source.gitrepo import GitCache
from gitops_kd.status.source import SHORT_SHA, SourceRecord


@dataclass(frozen=True)
class ClusterCommit:
    """A commit a KDRollout shows (its attempt, its in-sync record or a history entry) and where."""

    sha: str
    where: str  # "KDRollout ns/name status.commit"


@dataclass(frozen=True)
class Verdict:
    """What to adopt from a record (applied, baseline) or why nothing of it may be used (`problem`)."""

    applied: str | None = None
    baseline: str | None = None
    problem: str = ""


def cluster_commits(rollouts: Iterable[Mapping[str, Any]]) -> tuple[ClusterCommit, ...]:
    """Every commit the KDRollouts (raw objects) name: the status's commit, synced commit and history[].commit."""
    found: list[ClusterCommit] = []
    for obj in rollouts:
        meta, status = obj.get("metadata") or {}, obj.get("status") or {}
        where = f"KDRollout {meta.get('namespace')}/{meta.get('name')}"
        recorded = RolloutStatus.from_obj(status)
        for field in ("commit", "synced_commit"):
            sha = getattr(recorded, field)
            if sha:
                found.append(ClusterCommit(sha, f"{where} status.{status_key(field)}"))
        found.extend(ClusterCommit(h.commit, f"{where} status.{status_key('history')}") for h in recorded.history if h.commit)
    return tuple(found)


def in_git(git: GitCache, sha: str) -> bool:
    return git.run("cat-file", "-e", f"{sha}^{{commit}}").returncode == 0


def contains(git: GitCache, ancestor: str, descendant: str) -> bool:
    """True when `descendant` is `ancestor` or descends from it."""
    return ancestor == descendant or git.run("merge-base", "--is-ancestor", ancestor, descendant).returncode == 0


class _Asked:
    """in_git / contains, each asked of Git once per distinct commit (a fleet's KDRollouts show the same few
    commits thousands of times: one `git` process each was minutes at 10,000 clusters)."""

    def __init__(self, git: GitCache) -> None:
        self._git = git
        self._in: dict[str, bool] = {}
        self._contains: dict[tuple[str, str], bool] = {}

    def in_git(self, sha: str) -> bool:
        if sha not in self._in:
            self._in[sha] = in_git(self._git, sha)
        return self._in[sha]

    def contains(self, ancestor: str, descendant: str) -> bool:
        if (ancestor, descendant) not in self._contains:
            self._contains[(ancestor, descendant)] = contains(self._git, ancestor, descendant)
        return self._contains[(ancestor, descendant)]


def check_record(git: GitCache, found: SourceRecord | None, shown: Iterable[ClusterCommit], *, allow_force_push: bool) -> Verdict:
    """The record to adopt, checked: its applied commit exists in Git (or the baseline is gone too: a force push
    the source then refuses), the baseline descends from it, and it contains every commit the cluster shows (a
    KDRollout attempt newer than the record means the record is stale or was edited: planning from it would
    downgrade). A baseline behind the applied commit on the same line of history (written by a build before
    64fbf8d, which could record a commit and then write the older baseline back) is lifted to the applied commit,
    the newest applied, which is what a baseline is. An empty record (deleted, new) takes the newest commit the
    cluster shows as force-push baseline (one no longer in Git, if any: the branch was rewritten), so a history
    rewrite is still refused."""
    asked = _Asked(git)
    known = [c for c in shown if asked.in_git(c.sha)]
    if found is None or not (found.applied or found.baseline):
        gone = [c for c in shown if not asked.in_git(c.sha)]
        if gone and not allow_force_push:  # rewritten away: the source refuses every head it cannot check against it
            return Verdict(None, gone[0].sha)
        baseline = _newest(asked, known)
        if known and baseline is None and not allow_force_push:
            return Verdict(
                problem="the record is empty and the commits the KDRollouts show are not one line of "
                "history: no force-push baseline can be re-established"
            )
        return Verdict(None, baseline)
    baseline_known = not found.baseline or asked.in_git(found.baseline)
    if found.applied and not asked.in_git(found.applied):
        if baseline_known:  # (both gone: the branch was force-pushed; the source refuses every head it cannot check)
            return Verdict(
                problem=f"lastAppliedRevision {found.applied[:SHORT_SHA]} is not a commit of {found.url}@{found.branch}"
            )
        return Verdict(found.applied, found.baseline)
    baseline = found.baseline
    if found.applied and baseline and baseline_known and not asked.contains(found.applied, baseline):
        if not asked.contains(baseline, found.applied):
            return Verdict(
                problem=f"forcePushBaseline {baseline[:SHORT_SHA]} does not descend from "
                f"lastAppliedRevision {found.applied[:SHORT_SHA]}, nor it from the baseline"
            )
        baseline = found.applied  # behind it on the same line: lifted
    newest = found.applied or baseline
    if not allow_force_push and (found.applied or baseline_known):
        for commit in known:
            if not asked.contains(commit.sha, newest):
                return Verdict(
                    problem=f"{commit.where} shows commit {commit.sha[:SHORT_SHA]}, newer than the "
                    f"recorded {newest[:SHORT_SHA]}: the record is stale or was edited"
                )
    return Verdict(found.applied or None, baseline or None)


def _newest(asked: _Asked, commits: list[ClusterCommit]) -> str | None:
    """The commit that contains all the others (None if there are none or they are not one line of history)."""
    best: str | None = None
    for commit in commits:
        if best is None or asked.contains(best, commit.sha):
            best = commit.sha
    if best is not None and all(asked.contains(c.sha, best) for c in commits):
        return best
    return None
