"""push_revert: gitops-kd's own revert commit of an offending commit, pushed to the followed branch.

The revert is made in a temporary worktree of the Git source's bare clone (``git revert --no-edit``,
then the message reworded with the reason and a ``Signed-off-by: gitops-kd <...>`` trailer) and
pushed with a lease on the branch head it was made on: if the branch moved in between, the push is
refused, the clone re-fetched and the revert made again once on the new head. A commit already
reverted on the branch ("This reverts commit <sha>." after it) is never reverted twice: its revert's
sha is returned and nothing is pushed.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gitops_kd.source.errors import SourceError
from gitops_kd.source.git_source import GitSource
from gitops_kd.source.gitrepo import REMOTE, GitCache, GitResult

log = logging.getLogger(__name__)

DEFAULT_AUTHOR_NAME = "gitops-kd"
DEFAULT_AUTHOR_EMAIL = "gitops-kd@localhost"


class RevertError(SourceError):
    """The revert could not be made or pushed (conflict, commit not on the branch, push refused twice)."""


@dataclass(frozen=True)
class RevertResult:
    """``sha`` of the revert commit on the branch; ``pushed`` False when it was already there."""

    sha: str
    reverted: str
    pushed: bool


def _git(
    git: GitCache, *args: str, check: bool = True, env: Mapping[str, str] | None = None, worktree: Path | None = None
) -> GitResult:
    out = git.run(*args, env=env, worktree=worktree)
    if check and out.returncode != 0:
        raise RevertError(f"git {' '.join(args)} failed: {(out.stderr or out.stdout).strip()}")
    return out


def revert_message(subject: str, commit: str, reason: str | None) -> str:
    """The revert commit's message (without the sign-off trailer, which git adds)."""
    lines = [f'Revert "{subject}"', ""]
    if reason:
        lines += [reason.strip(), ""]
    lines.append(f"This reverts commit {commit}.")
    return "\n".join(lines) + "\n"


def find_revert(git: GitCache, commit: str, head: str) -> str | None:
    """The newest commit after ``commit`` up to ``head`` saying "This reverts commit <commit>.", or None."""
    out = _git(git, "log", "--format=%H", "--fixed-strings", f"--grep=This reverts commit {commit}.", f"{commit}..{head}")
    shas = out.stdout.split()
    return shas[0] if shas else None


def push_revert(
    source: GitSource,
    commit: str,
    *,
    author_name: str = DEFAULT_AUTHOR_NAME,
    author_email: str = DEFAULT_AUTHOR_EMAIL,
    message: str | None = None,
) -> str:
    """Revert ``commit`` on ``source``'s branch and push it; returns the revert commit's sha.

    ``message`` (the reason) goes into the commit message body. Raises RevertError when the commit is
    not on the branch, the revert conflicts or is empty, or the push is refused again after one retry.
    """
    return push_revert_result(source, commit, author_name=author_name, author_email=author_email, message=message).sha


def push_revert_result(
    source: GitSource,
    commit: str,
    *,
    author_name: str = DEFAULT_AUTHOR_NAME,
    author_email: str = DEFAULT_AUTHOR_EMAIL,
    message: str | None = None,
) -> RevertResult:
    """push_revert, also saying whether a push happened (False: the branch already had the revert)."""
    git = source.git
    with source.lock:
        for attempt in (1, 2):
            source.fetch()
            head = source.resolve(f"refs/remotes/{REMOTE}/{source.branch}")
            sha = source.resolve(commit)
            if _git(git, "merge-base", "--is-ancestor", sha, head, check=False).returncode != 0:
                raise RevertError(
                    f"{source.url}: commit {sha[:12]} is not on branch {source.branch} (head {head[:12]}); not reverting it"
                )
            existing = find_revert(git, sha, head)
            if existing is not None:
                log.info("commit %s is already reverted by %s on %s", sha[:12], existing[:12], source.branch)
                return RevertResult(existing, sha, False)
            new = _make_revert(git, sha, head, author_name, author_email, message)
            pushed = _git(
                git,
                "push",
                "--porcelain",
                REMOTE,
                f"{new}:refs/heads/{source.branch}",
                f"--force-with-lease=refs/heads/{source.branch}:{head}",
                check=False,
            )
            if pushed.returncode == 0:
                source.fetch()
                log.info("pushed %s reverting %s to %s@%s", new[:12], sha[:12], source.url, source.branch)
                return RevertResult(new, sha, True)
            detail = (pushed.stderr or pushed.stdout).strip()
            log.warning("push of revert %s refused (attempt %d; the branch moved?): %s", new[:12], attempt, detail)
        raise RevertError(
            f"{source.url}: push of the revert of {sha[:12]} to {source.branch} was refused twice "
            f"(the branch keeps moving): {detail}"
        )


def _make_revert(git: GitCache, sha: str, head: str, name: str, email: str, reason: str | None) -> str:
    """The revert commit of ``sha`` on top of ``head``, made in a temporary worktree (removed after)."""
    ident = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}
    tmp = Path(tempfile.mkdtemp(prefix="gitops-kd-revert-"))
    tree = tmp / "wt"
    try:
        _git(git, "worktree", "add", "--detach", str(tree), head)

        def run(*args: str) -> GitResult:
            return _git(git, *args, check=False, env=ident, worktree=tree)

        res = run("revert", "--no-edit", "--signoff", sha)
        if res.returncode != 0:
            run("revert", "--abort")
            why = (res.stdout + res.stderr).strip()
            raise RevertError(f"git revert {sha[:12]} on {head[:12]} failed (resolve it by hand): {why}")
        subject = run("show", "-s", "--format=%s", sha).stdout.strip()
        msg = tmp / "message"
        msg.write_text(revert_message(subject, sha, reason))
        res = run("commit", "--amend", "--signoff", "--no-verify", "-F", str(msg))
        if res.returncode != 0:
            raise RevertError(f"rewording the revert of {sha[:12]} failed: {res.stderr.strip()}")
        return run("rev-parse", "HEAD").stdout.strip()
    finally:
        _git(git, "worktree", "remove", "--force", str(tree), check=False)
        _git(git, "worktree", "prune", check=False)
        shutil.rmtree(tmp, ignore_errors=True)


__all__ = ["RevertError", "RevertResult", "find_revert", "push_revert", "push_revert_result", "revert_message"]
