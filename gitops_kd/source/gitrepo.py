"""Git mechanics over a local bare cache of the remote: fetch, resolve, list trees, read blobs, diff."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import git

from gitops_kd.source.errors import SourceError
from gitops_kd.source.layout import TreeEntry

log = logging.getLogger(__name__)

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
REMOTE = "origin"
_FETCH_REFSPECS = (f"+refs/heads/*:refs/remotes/{REMOTE}/*", "+refs/tags/*:refs/tags/*")
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}


@dataclass(frozen=True)
class GitResult:
    """What one git command said: exit status and its output (not stripped)."""

    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class RawChange:
    """One line of `git diff-tree --raw -M`: status letter A, M, D, R, T (C is not requested)."""

    status: str
    old_path: str | None
    new_path: str | None
    old_sha: str | None
    new_sha: str | None
    old_mode: str | None = None
    new_mode: str | None = None


class GitCache:
    """A bare repository in `path` whose remote `origin` is `url`; every read is from git objects."""

    def __init__(self, url: str, path: Path, *, timeout: float = 120.0) -> None:
        self.url = url
        self.path = Path(path)
        self.timeout = timeout
        self._repo: git.Repo | None = None

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def repo(self) -> git.Repo:
        if self._repo is None:
            self._repo = self._open()
        return self._repo

    def _open(self) -> git.Repo:
        if (self.path / "HEAD").is_file():
            repo = git.Repo(self.path)
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            repo = git.Repo.init(self.path, bare=True)
        env = dict(_GIT_ENV)
        if "GIT_SSH_COMMAND" not in os.environ:
            env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
        repo.git.update_environment(**env)
        names = [r.name for r in repo.remotes]
        if REMOTE not in names:
            repo.git.remote("add", REMOTE, self.url)
        elif repo.remotes[REMOTE].url != self.url:
            log.info("git cache %s: remote url changed to %s", self.path, self.url)
            repo.git.remote("set-url", REMOTE, self.url)
        return repo

    def run(self, *args: str, env: Mapping[str, str] | None = None, worktree: Path | None = None) -> GitResult:
        """One git command on this repository through GitPython, in the environment every git call here has:
        no prompt (GIT_TERMINAL_PROMPT=0, GIT_ASKPASS=true, ssh BatchMode unless GIT_SSH_COMMAND is set),
        C locale, the fetch timeout. `env` adds variables (an identity, GNUPGHOME); `worktree` runs it in a
        linked worktree of the repository. Never raises for a non-zero exit: the caller reads `returncode`."""
        command = ["git", *(("-C", str(worktree)) if worktree is not None else ()), *args]
        status, out, err = self.repo.git.execute(
            command,
            with_extended_output=True,
            with_exceptions=False,
            kill_after_timeout=self.timeout,
            env=dict(env or {}),
            strip_newline_in_stdout=False,
        )
        return GitResult(int(status or 0), str(out), str(err))

    def close(self) -> None:
        """Stop git's persistent helper processes (safe to call twice)."""
        if self._repo is not None:
            self._repo.close()
            self._repo = None

    # -- remote ----------------------------------------------------------------------------
    def fetch(self) -> None:
        """Fetch every branch and tag of the remote; raises SourceError naming the url on failure."""
        try:
            self.repo.git.fetch(REMOTE, "--prune", "--no-write-fetch-head", *_FETCH_REFSPECS, kill_after_timeout=self.timeout)
        except git.GitCommandError as exc:
            raise SourceError(f"{self.url}: git fetch failed: {_stderr(exc)}") from exc

    def fetch_commit(self, sha: str) -> None:
        """Fetch one commit by its sha (one no branch points at, e.g. a pull request's merge commit)."""
        try:
            self.repo.git.fetch(REMOTE, "--no-write-fetch-head", sha, kill_after_timeout=self.timeout)
        except git.GitCommandError as exc:
            raise SourceError(f"{self.url}: git fetch {sha} failed: {_stderr(exc)}") from exc

    def point_head_at(self, branch: str) -> None:
        """Make HEAD of the cache follow the remote branch, so revisions like HEAD~1 resolve."""
        self.repo.git.symbolic_ref("HEAD", f"refs/remotes/{REMOTE}/{branch}")

    def branch_head(self, branch: str) -> str | None:
        """The fetched commit of the remote branch, or None if the remote has no such branch."""
        return self._rev_parse(f"refs/remotes/{REMOTE}/{branch}")

    def resolve(self, rev: str) -> str:
        """The full commit sha for a revision (sha, tag, branch name, HEAD~n, origin/x, ...)."""
        for candidate in (rev, f"{REMOTE}/{rev}"):
            sha = self._rev_parse(candidate)
            if sha is not None:
                return sha
        raise SourceError(f"{self.url}: unknown revision {rev!r}")

    def _rev_parse(self, rev: str) -> str | None:
        if rev.startswith("-"):
            return None
        try:
            out = self.repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
        except git.GitCommandError:
            return None
        return out.strip() or None

    # -- objects ---------------------------------------------------------------------------
    def list_tree(self, commit: str) -> list[TreeEntry]:
        """Every blob, symlink and submodule of the commit's tree (recursively), with sizes."""
        out = self.repo.git.ls_tree("-r", "-l", "-z", "--full-tree", commit, strip_newline_in_stdout=False)
        entries: list[TreeEntry] = []
        for record in out.split("\0"):
            if not record:
                continue
            meta, path = record.split("\t", 1)
            mode, _kind, sha, size = meta.split()
            entries.append(TreeEntry(path, mode, sha, None if size == "-" else int(size)))
        return entries

    def subject(self, commit: str) -> str:
        """The first line of the commit's message."""
        return str(self.repo.git.log("-1", "--format=%s", commit)).strip()

    def read_blob(self, sha: str) -> bytes:
        """The content of a blob, read from the object database."""
        return cast(bytes, self.repo.odb.stream(bytes.fromhex(sha)).read())

    def blob_size(self, sha: str) -> int:
        """The size of a blob in bytes, from its object header (the content is not read)."""
        return int(self.repo.odb.info(bytes.fromhex(sha)).size)

    def diff(self, old: str | None, new: str) -> list[RawChange]:
        """Changes from commit `old` (None: the empty tree) to `new`, with rename detection."""
        out = self.repo.git.diff_tree(
            "-r", "-z", "-M", "--raw", "--no-commit-id", old or EMPTY_TREE, new, strip_newline_in_stdout=False
        )
        fields = out.split("\0")
        changes: list[RawChange] = []
        i = 0
        while i < len(fields):
            meta = fields[i]
            if not meta.startswith(":"):
                i += 1
                continue
            omode, nmode, osha, nsha, status = meta[1:].split()
            letter = status[0]
            if letter in "RC":
                changes.append(RawChange(letter, fields[i + 1], fields[i + 2], osha, nsha, omode, nmode))
                i += 3
                continue
            path = fields[i + 1]
            changes.append(
                RawChange(
                    letter,
                    None if letter == "A" else path,
                    None if letter == "D" else path,
                    None if letter == "A" else osha,
                    None if letter == "D" else nsha,
                    None if letter == "A" else omode,
                    None if letter == "D" else nmode,
                )
            )
            i += 2
        return changes


def _stderr(exc: git.GitCommandError) -> str:
    text = (exc.stderr or "").strip().replace("stderr: ", "", 1).strip().strip("'").strip()
    return text or str(exc)
