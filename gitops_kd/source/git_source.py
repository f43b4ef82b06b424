"""GitSource: follows one branch of a Git repo and turns each new head into a checked desired state."""

from __future__ import annotations

import dataclasses
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from git.exc import GitError

from gitops_kd.source.budget import Budget, budget_error
from gitops_kd.source.changes import change_set
from gitops_kd.source.errors import SourceError
from gitops_kd.source.gitrepo import GitCache, RawChange
from gitops_kd.source.model import ChangeSet, DesiredState, Key, PollResult
from gitops_kd.source.repair import CACHE_UNUSABLE, CacheCorrupt, fsck_problem, looks_corrupt
from gitops_kd.source.snapshot import (
    ManifestCache,
    Snapshot,
    derive_snapshot,
    desired_from,
    key_of,
    keyed,
    read_snapshot,
)
from gitops_kd.source.state_file import STATE_FILE_NAME, SourceState, load_state, save_state
from gitops_kd.source.trust import CommitTrust
from gitops_kd.spec import FieldError, KDApp, KDCluster

log = logging.getLogger(__name__)

REPO_DIR_NAME = "repo.git"
DEFAULT_BRANCH = "main"


class GitSource:
    """A branch of a Git repository as a sequence of desired states.

    `cache_dir` holds a bare clone (``repo.git``) and a state file remembering the last applied
    commit; if it is None a temporary directory is used and removed by close(). Thread-safe: every
    public method holds one lock, so a poll and a `desired_at` never interleave.

    Trust (see gitops_kd.source.trust): with `trusted_keys` (armored OpenPGP public keys, optionally
    narrowed by `allowed_fingerprints`) poll() accepts a new head only if its signature verifies; a
    head that does not descend from the applied commit is refused unless `allow_force_push`. Such a
    refusal is reported like any other (accepted False, errors naming the commit) and nothing of the
    refused commit is read.
    """

    def __init__(
        self,
        url: str,
        branch: str = DEFAULT_BRANCH,
        cache_dir: Path | str | None = None,
        *,
        default_namespace: str = "default",
        fetch_timeout: float = 120.0,
        trusted_keys: Sequence[str] | None = None,
        allowed_fingerprints: Sequence[str] | None = None,
        allow_force_push: bool = False,
        budget: Budget | None = None,
    ) -> None:
        if not url:
            raise ValueError("GitSource: url must not be empty")
        if not branch:
            raise ValueError("GitSource: branch must not be empty")
        self.trust = CommitTrust(
            trusted_keys, allowed_fingerprints=allowed_fingerprints, allow_force_push=allow_force_push
        )  # first: bad keys fail before any I/O
        self.url = str(url)
        self.branch = branch
        self.budget = budget or Budget()  # a commit's manifests over it are refused before any is parsed
        self.default_namespace = default_namespace
        self._own_dir = cache_dir is None
        self.cache_dir = Path(tempfile.mkdtemp(prefix="gitops-kd-source-")) if cache_dir is None else Path(cache_dir)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self._git = GitCache(self.url, self.cache_dir / REPO_DIR_NAME, timeout=fetch_timeout)
        self._state_path = self.cache_dir / STATE_FILE_NAME
        self._lock = threading.RLock()
        self.cache = ManifestCache()
        self._fetched = False
        self._last_polled: str | None = None
        self._failing: tuple[str, int] | None = None  # (message, polls) of the failure going on, if any
        self._failing_since = 0.0  # time.monotonic() of the first failed poll of the failure going on
        self.recoveries = 0  # how many times a corrupt cache was thrown away and cloned again
        self.last_recovery = ""  # why, the last time
        self._last_result: PollResult | None = None
        self._last_good: DesiredState | None = None
        self._last_good_files: tuple[tuple[str, str], ...] = ()
        state = load_state(self._state_path)
        self._applied: str | None = state.applied_commit if state else None
        self._baseline: str | None = None  # the newest applied commit: a new head must descend from it
        if state and (state.url, state.branch) != (self.url, self.branch):
            log.info(
                "%s: cache was for %s@%s, now %s@%s; keeping applied commit %s",
                self.cache_dir,
                state.url,
                state.branch,
                self.url,
                self.branch,
                self._applied,
            )

    # -- public ----------------------------------------------------------------------------
    @property
    def applied_commit(self) -> str | None:
        """The commit last passed to mark_applied (persisted across restarts), or None."""
        return self._applied

    @property
    def git(self) -> GitCache:
        """The local cache of the remote: the one way git is run for this source (fetch, verify, revert, push)."""
        return self._git

    @property
    def baseline(self) -> str | None:
        """The force-push baseline: the newest commit applied from the branch (set_baseline, mark_applied or
        adopted from the cluster); a new head must descend from it."""
        return self._baseline or self._applied

    def set_baseline(self, commit: str) -> None:
        """Record that `commit` is being applied: from now on a head must descend from it."""
        with self._lock:
            self._baseline = self._resolve(commit)

    def adopt(self, applied: str | None, baseline: str | None) -> None:
        """Take the applied commit and the force-push baseline recorded in the cluster: they replace what the
        local state file says (it is only a cache). Nothing is fetched here; the next read fetches first."""
        with self._lock:
            if applied != self._applied:
                log.info(
                    "git source: the cluster records applied commit %s (local cache said %s); using it", applied, self._applied
                )
            self._applied = applied or None
            self._baseline = baseline or None
            self._last_good, self._last_good_files = None, ()
            self._last_polled, self._last_result = None, None

    def subject(self, commit: str) -> str:
        """The first line of a commit's message ("" if it cannot be read)."""
        with self._lock:
            try:
                return self._git.subject(self._resolve(commit))
            except Exception:  # noqa: BLE001 - only shown in statuses and history
                return ""

    @property
    def lock(self) -> threading.RLock:
        """The source's lock (held by every public method); source/revert.py holds it while it pushes."""
        return self._lock

    @property
    def last_good(self) -> DesiredState | None:
        """The desired state of the last accepted commit, or None if none was accepted yet."""
        return self._last_good

    @property
    def parse_count(self) -> int:
        """How many manifest files were parsed so far (cache misses)."""
        return self.cache.parses

    @property
    def failing_polls(self) -> int:
        """How many polls in a row failed to read the remote or the cache (0 once one works)."""
        return self._failing[1] if self._failing is not None else 0

    @property
    def last_error(self) -> str:
        """The message of the failure going on ("" when the last poll worked)."""
        return self._failing[0] if self._failing is not None else ""

    @property
    def cache_unusable_for(self) -> float:
        """Seconds for which every poll failed because the local cache could not be read even after it was cloned
        again (0 when the last poll worked, or failed for another reason such as the remote being down)."""
        if self._failing is None or not looks_corrupt(self._failing[0]):
            return 0.0
        return time.monotonic() - self._failing_since

    def fetch(self) -> None:
        """Update the local clone from the remote; raises SourceError if git fails. A fetch that fails because the
        local cache is corrupt (source/repair.py) throws the cache away and clones it again, once."""
        with self._lock:
            try:
                self._fetch()
            except SourceError as exc:
                if not looks_corrupt(exc.message):
                    raise
                self._recover(exc.message)
                self._fetch()

    def repair(self, error: BaseException) -> bool:
        """After `error` reading this source's objects: if the local cache is corrupt (the message names an
        unreadable object, else git fsck finds a problem), throw it away and clone it again; True if it did."""
        with self._lock:
            message = str(error)
            from_git = isinstance(error, (SourceError, GitError, ValueError, OSError))  # gitdb raises the last two
            problem = message if looks_corrupt(message) else fsck_problem(self._git.path) if from_git else ""
            if not problem:
                return False
            self._recover(problem)
            self.fetch()
            return True

    def _fetch(self) -> None:
        with self._lock:
            try:
                self._git.fetch()
                if self._git.branch_head(self.branch) is not None:
                    self._git.point_head_at(self.branch)
            except SourceError:
                raise
            except Exception as exc:  # noqa: BLE001 - gitpython cannot even open the cache
                raise SourceError(f"{self.url}: {CACHE_UNUSABLE} ({self._git.path}): {exc!r}") from exc
            self._fetched = True

    def fetch_counted(self) -> None:
        """fetch(), a failure counted as a failed poll (failing_polls, last_error): the record check at start reads
        Git before any poll, and a repository it cannot read is a Git failure, not a record problem."""
        with self._lock:
            try:
                self.fetch()
            except SourceError as exc:
                self._note_failure(exc.message)
                raise

    def poll(self) -> PollResult:
        """Fetch, and if the branch head moved build, check and report its desired state. A corrupt local
        cache is thrown away and cloned again once per poll (source/repair.py), then the poll is retried."""
        with self._lock:
            try:
                return self._poll()
            except CacheCorrupt as exc:
                self._recover(str(exc))
            try:
                return self._poll()
            except CacheCorrupt as exc:
                self._note_failure(str(exc))
                return self._failure(str(exc))

    def _poll(self) -> PollResult:
        try:
            self.fetch()
            head = self._git.branch_head(self.branch)
            if head is None:
                raise SourceError(f"{self.url}: branch {self.branch!r} not found")
        except SourceError as exc:
            if looks_corrupt(exc.message):
                raise CacheCorrupt(exc.message) from exc
            self._note_failure(exc.message)
            return self._failure(exc.message)
        if head == self._last_polled and self._last_result is not None:
            self._works_again()
            return dataclasses.replace(self._last_result, changed=False)
        try:
            result = self._evaluate(head)
        except Exception as exc:  # noqa: BLE001 - an object that cannot be read: find out whether the cache is sound
            problem = str(exc) if looks_corrupt(str(exc)) else fsck_problem(self._git.path)
            if problem:
                raise CacheCorrupt(f"{self.url}: reading commit {head} failed: {problem}") from exc
            raise
        self._works_again()
        self._last_polled, self._last_result = head, result
        return result

    def _works_again(self) -> None:
        if self._failing is not None:
            log.info("git source poll works again after %d failed poll(s)", self._failing[1])
            self._failing = None

    def _recover(self, reason: str) -> None:
        """Throw the corrupt cache away; the next fetch clones it again."""
        log.warning(
            "git cache %s is corrupt, removing it and cloning %s again: %s",
            self._git.path,
            self.url,
            reason.splitlines()[0] if reason else "",
        )
        self._git.close()
        shutil.rmtree(self._git.path, ignore_errors=True)
        self._git = GitCache(self.url, self._git.path, timeout=self._git.timeout)
        self._fetched = False
        self._last_polled, self._last_result = None, None
        self.recoveries += 1
        self.last_recovery = reason

    def _note_failure(self, message: str) -> None:
        """A warning for a new failure (or a changed message); the same failure again only at debug level,
        so an outage of the Git server does not log a warning every poll (the poll metric counts each)."""
        same = self._failing is not None and self._failing[0] == message
        if self._failing is None:
            self._failing_since = time.monotonic()
        self._failing = (message, self._failing[1] + 1 if self._failing is not None else 1)
        log.log(
            logging.DEBUG if same else logging.WARNING,
            "git source poll failed: %s%s",
            message,
            " (repeats are logged at debug level until a poll works)" if not same else "",
        )

    @property
    def last_polled(self) -> str | None:
        """The branch head seen by the last poll that reached Git (accepted or not), or None."""
        return self._last_polled

    def commit_subject(self, commit: str) -> str | None:
        """The subject line of `commit` from the local clone (no fetch), or None when it is not there."""
        try:
            with self._lock:
                return str(self._git.repo.commit(commit).summary)
        except Exception:  # noqa: BLE001 - unknown commit, no clone yet: the caller shows nothing
            return None

    def fetch_commit(self, sha: str) -> None:
        """Make one commit known by its full sha, when no fetched branch or tag reaches it."""
        with self._lock:
            if not self._fetched:
                self.fetch()
            if not self._known(sha):
                self._git.fetch_commit(sha)

    def mark_applied(self, commit: str) -> None:
        """Record that the desired state of `commit` was applied; persisted in the state file."""
        with self._lock:
            sha = self._resolve(commit)
            self._applied = sha
            self._baseline = sha
            save_state(self._state_path, SourceState(self.url, self.branch, sha))
            log.info("git source: applied commit is now %s", sha)

    def desired_at(self, commit: str) -> DesiredState:
        """The desired state at any revision; raises SourceError with every error if it is refused."""
        with self._lock:
            sha = self._resolve(commit)
            return desired_from(self._snapshot(sha), self.default_namespace, self.subject(sha))

    def changes_between(self, old: str | None, new: str) -> ChangeSet:
        """The change set from revision `old` (None: an empty repo) to revision `new`."""
        with self._lock:
            old_sha = self._resolve(old) if old is not None else None
            new_sha = self._resolve(new)
            return self._changes(old_sha, new_sha, self._snapshot(new_sha))

    def resolve(self, rev: str) -> str:
        """The full commit sha of a revision (fetching first if it is not known yet)."""
        with self._lock:
            return self._resolve(rev)

    def close(self) -> None:
        """Stop git helper processes; remove the cache dir if this source created it."""
        with self._lock:
            self._git.close()
            self.trust.close()
            if self._own_dir:
                shutil.rmtree(self.cache_dir, ignore_errors=True)

    def __enter__(self) -> GitSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------
    def _evaluate(self, head: str) -> PollResult:
        base = self._applied if self._applied and self._known(self._applied) else None
        if self._applied and base is None:
            log.warning("applied commit %s is not in %s; diffing against an empty repo", self._applied, self.url)
        base_snap = self._snapshot(base) if base is not None else None
        if self._last_good is None and base_snap is not None:
            self._adopt_as_good(base_snap)
        refusals = self.trust.check(self._git, head, self.baseline)
        if refusals:
            log.warning("commit %s refused: not trusted", head)
            return PollResult(head, True, self._last_good, ChangeSet(), refusals, False)
        raw = self._git.diff(base, head)
        snap = self._snapshot(head, base_snap, raw)
        changes = self._diff(raw, base_snap, snap) if snap.files or not snap.errors else ChangeSet()  # over budget: unread
        if snap.errors:
            log.warning("commit %s refused: %d error(s)", head, len(snap.errors))
            result = PollResult(head, True, self._last_good, changes, snap.errors, False)
        else:
            self._adopt_as_good(snap)
            result = PollResult(head, True, self._last_good, changes, (), True)
        keep = snap.file_keys + self._last_good_files + (base_snap.file_keys if base_snap else ())
        self.cache.retain(keep)
        return result

    def _adopt_as_good(self, snap: Snapshot) -> None:
        if snap.errors:
            log.warning("applied commit %s no longer passes the checks; no last good state", snap.commit)
            return
        self._last_good = desired_from(snap, self.default_namespace, self.subject(snap.commit))
        self._last_good_files = snap.file_keys

    def _changes(self, old: str | None, new: str, new_snap: Snapshot) -> ChangeSet:
        return self._diff(self._git.diff(old, new), self._snapshot(old) if old else None, new_snap)

    def _diff(self, raw: list[RawChange], old_snap: Snapshot | None, new_snap: Snapshot) -> ChangeSet:
        """The change set; only the specs defined in the files git names as changed are compared."""
        old_apps, old_clusters = self._keyed(old_snap) if old_snap else ({}, {})
        new_apps, new_clusters = self._keyed(new_snap)
        paths = {p for c in raw for p in (c.old_path, c.new_path) if p is not None}
        only = {
            key_of(obj, self.default_namespace)
            for snap in (old_snap, new_snap)
            if snap is not None
            for p in paths
            if (f := snap.by_path.get(p)) is not None
            for obj in f.objects
        }
        return change_set(raw, old_apps, new_apps, old_clusters, new_clusters, only=only)

    def _keyed(self, snap: Snapshot) -> tuple[dict[Key, KDApp], dict[Key, KDCluster]]:
        if snap.default_namespace == self.default_namespace:
            return snap.by_key
        return keyed(snap, self.default_namespace)

    def _snapshot(self, commit: str, base: Snapshot | None = None, raw: list[RawChange] | None = None) -> Snapshot:
        """The commit's snapshot: remembered by the cache, else refused when its manifests exceed the budget (only
        the tree listing read), else derived from ``base`` and git's changes ``raw`` from it (only changed entries
        read), else listed, parsed (cache misses) and checked."""
        snap = self.cache.snapshot(commit, self.default_namespace)
        if snap is not None:
            self.cache.remember(snap, self.default_namespace)
            return snap
        entries = self._git.list_tree(commit)  # sizes from the object headers: the budget is checked before any read
        refused = budget_error(entries, self.budget)
        if refused is not None:
            log.warning("commit %s refused before parsing: %s", commit, refused.reason)
            snap = Snapshot(commit, (), (refused,), self.default_namespace)
        elif base is not None and raw is not None:
            snap = derive_snapshot(commit, base, raw, self.cache, self._git.read_blob, self._git.blob_size)
        if snap is None:
            snap = read_snapshot(commit, entries, self.cache, self._git.read_blob, self.default_namespace)
        self.cache.remember(snap, self.default_namespace)
        return snap

    def _known(self, sha: str) -> bool:
        try:
            self._git.resolve(sha)
        except SourceError:
            return False
        return True

    def _resolve(self, rev: str) -> str:
        if not self._fetched:
            self.fetch()
        try:
            return self._git.resolve(rev)
        except SourceError:
            self.fetch()
            return self._git.resolve(rev)

    def _failure(self, message: str) -> PollResult:
        reason = message.removeprefix(f"{self.url}: ")
        return PollResult(
            self._last_polled or "", False, self._last_good, ChangeSet(), (FieldError(self.url, "", reason),), False
        )
