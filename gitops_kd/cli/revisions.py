"""Revisions of a local repository resolved by its own git (origin/main, a CI checkout's detached HEAD)."""

from __future__ import annotations

import os
import subprocess

import click

from gitops_kd.cli.exits import source_exit
from gitops_kd.cli.problems import text_line
from gitops_kd.source import DesiredState, GitSource, SourceError


def local_sha(repo: str, rev: str) -> str | None:
    """The commit ``rev`` names in the local repository ``repo``; None if it is not a local repository
    or has no such revision."""
    if not os.path.isdir(repo) or rev.startswith("-"):
        return None
    done = subprocess.run(
        ["git", "-C", repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    sha = done.stdout.strip()
    return sha if done.returncode == 0 and sha else None


def resolve(source: GitSource, repo: str, rev: str) -> str:
    """The full sha of ``rev``: as the local repository's git sees it (fetched into the source's cache
    when no branch reaches it), else as the source's clone does."""
    sha = local_sha(repo, rev)
    if sha is None:
        return source.resolve(rev)
    source.fetch_commit(sha)
    return sha


def local_branches(repo: str) -> list[str]:
    """The branch names of the local repository ``repo`` (empty for a URL)."""
    if not os.path.isdir(repo):
        return []
    done = subprocess.run(
        ["git", "-C", repo, "for-each-ref", "--format=%(refname:short)", "refs/heads"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.split() if done.returncode == 0 else []


def planned_revision(source: GitSource, repo: str, branch: str | None, rev: str | None) -> str:
    """The commit plan and diff read: --rev; else the head of --branch when given; else, for a local repository,
    its checked-out HEAD (a pull request's branch plans itself); else the head of the source's branch. A branch
    that does not exist is a SourceError naming the branches there are."""
    if rev is not None:
        return resolve(source, repo, rev)
    if branch is None:
        sha = local_sha(repo, "HEAD")
        if sha is not None:
            source.fetch_commit(sha)
            return sha
    try:
        return source.resolve(f"refs/remotes/origin/{source.branch}")
    except SourceError as exc:
        there = local_branches(repo)
        listed = f" (its branches: {', '.join(there)})" if there else ""
        raise SourceError(f"{source.url}: branch {source.branch!r} not found{listed}") from exc


def desired_or_exit(source: GitSource, repo: str, rev: str, which: str, *, exit_code: int | None = None) -> DesiredState:
    """The desired state at ``rev`` (resolve's sha); one the source refuses is printed (``error: WHICH REV: ...``
    and its located errors) and exits with ``exit_code``, by default exits.source_exit of its errors."""
    try:
        return source.desired_at(resolve(source, repo, rev))
    except SourceError as exc:
        click.echo(f"error: {which} {rev}: {exc.message}", err=True)
        for err in exc.errors:
            click.echo(f"  {text_line(err)}", err=True)
        raise SystemExit(source_exit(exc.errors) if exit_code is None else exit_code) from exc
