"""Revisions of a local repository resolved by its own git (origin/main, a CI checkout's detached HEAD)."""

from __future__ import annotations

import os
import subprocess

from gitops_kd.source import GitSource


def local_sha(repo: str, rev: str) -> str | None:
    """The commit ``rev`` names in the local repository ``repo``; None if it is not a local repository
    or has no such revision."""
    if not os.path.isdir(repo) or rev.startswith("-"):
        return None
    done = subprocess.run(["git", "-C", repo, "rev-parse", "--verify", "--quiet", "--end-of-options",
                           f"{rev}^{{commit}}"], capture_output=True, text=True, check=False)
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
