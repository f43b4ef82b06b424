"""Read one commit's manifests (through a per-path, per-blob parse cache) into a checked snapshot.

The cache also keeps the snapshots built from its entries, per (commit, default namespace): a commit
is immutable, so its snapshot is reused (the applied commit is not re-listed and re-checked every
poll) until ``retain`` drops one of its files.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gitops_kd.source.budget import Budget, budget_error
from gitops_kd.source.errors import SourceError
from gitops_kd.source.gitrepo import RawChange
from gitops_kd.source.layout import (
    MODE_SUBMODULE,
    TreeEntry,
    Verdict,
    classify,
    needs_link_target,
    under_manifest_roots,
)
from gitops_kd.source.model import DesiredState, Key
from gitops_kd.spec import FieldError, KDApp, KDCluster, SpecError, check_desired_set, load_manifests, locate

log = logging.getLogger(__name__)

Manifest = KDApp | KDCluster
BlobReader = Callable[[str], bytes]
MAX_LINK_TARGET = 4096  # a longer "symlink" blob is refused without reading it
MAX_SNAPSHOTS = 8  # remembered snapshots (applied, head, last good, a few desired_at); oldest dropped first


@dataclass(frozen=True)
class ParsedFile:
    """The objects (or the errors) of one manifest file at one blob sha."""

    path: str
    sha: str
    objects: tuple[Manifest, ...]
    errors: tuple[FieldError, ...]


class ManifestCache:
    """Parsed manifests keyed by (path, blob sha); counts parses so incremental reads are visible."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], ParsedFile] = {}
        self._snapshots: dict[tuple[str, str], Snapshot] = {}
        self._lock = threading.Lock()
        self.parses = 0
        self.hits = 0
        self.parsed_paths: list[str] = []  # every path parsed, in order (for tests and debugging)

    def get(self, path: str, sha: str, read_blob: BlobReader) -> ParsedFile:
        with self._lock:
            cached = self._entries.get((path, sha))
            if cached is not None:
                self.hits += 1
                return cached
        parsed = _parse(path, sha, read_blob)
        with self._lock:
            self.parses += 1
            self.parsed_paths.append(path)
            self._entries[(path, sha)] = parsed
        return parsed

    def snapshot(self, commit: str, default_namespace: str) -> Snapshot | None:
        """The snapshot remembered for this commit (read with this default namespace), or None."""
        with self._lock:
            return self._snapshots.get((commit, default_namespace))

    def remember(self, snapshot: Snapshot, default_namespace: str) -> None:
        """Keep a snapshot built from this cache's entries, until retain() drops one of its files."""
        with self._lock:
            self._snapshots.pop((snapshot.commit, default_namespace), None)
            self._snapshots[(snapshot.commit, default_namespace)] = snapshot
            while len(self._snapshots) > MAX_SNAPSHOTS:
                del self._snapshots[next(iter(self._snapshots))]

    def retain(self, keep: Iterable[tuple[str, str]]) -> None:
        """Drop every entry not in `keep` (the files of the commits still of interest), and every
        remembered snapshot with a file not in `keep`."""
        wanted = set(keep)
        with self._lock:
            self._entries = {k: v for k, v in self._entries.items() if k in wanted}
            self._snapshots = {k: v for k, v in self._snapshots.items() if wanted.issuperset(v.file_keys)}

    def __len__(self) -> int:
        return len(self._entries)


def _parse(path: str, sha: str, read_blob: BlobReader) -> ParsedFile:
    data = read_blob(sha)  # outside the try: an unreadable object is the cache's fault, not the file's (never cached)
    try:
        objects = tuple(load_manifests(path, data))
    except SpecError as exc:
        return ParsedFile(path, sha, (), exc.errors)
    except Exception as exc:  # a loader bug must not take the controller down; say which file
        log.exception("%s: unexpected error while loading", path)
        return ParsedFile(path, sha, (), (FieldError(path, "", f"internal error while loading: {exc}"),))
    return ParsedFile(path, sha, objects, ())


@dataclass(frozen=True)
class Snapshot:
    """All manifest files of one commit and every error found in them (empty: acceptable)."""

    commit: str
    files: tuple[ParsedFile, ...]
    errors: tuple[FieldError, ...]
    default_namespace: str = field(default="default", compare=False)

    @cached_property
    def file_keys(self) -> tuple[tuple[str, str], ...]:
        return tuple((f.path, f.sha) for f in self.files)

    @cached_property
    def by_path(self) -> dict[str, ParsedFile]:
        """The manifest files by repo path."""
        return {f.path: f for f in self.files}

    @cached_property
    def by_key(self) -> tuple[dict[Key, KDApp], dict[Key, KDCluster]]:
        """keyed(self, self.default_namespace), computed once (treat as read-only)."""
        return keyed(self, self.default_namespace)

    def objects(self) -> list[tuple[str, Manifest]]:
        return [(f.path, obj) for f in self.files for obj in f.objects]


def read_snapshot(
    commit: str,
    entries: Iterable[TreeEntry],
    cache: ManifestCache,
    read_blob: BlobReader,
    default_namespace: str,
    budget: Budget | None = None,
) -> Snapshot:
    """Apply the layout rules to a commit's tree, parse its manifests and run the cross-file checks. Over
    ``budget`` (source/budget.py) nothing is read: the snapshot holds the one budget error."""
    entries = list(entries)
    refused = budget_error(entries, budget) if budget is not None else None
    if refused is not None:
        return Snapshot(commit, (), (refused,), default_namespace)
    placed = {e.path: p for e in entries if (p := _place(e, cache, read_blob)) is not None}
    return _checked(commit, placed, default_namespace, read_blob)


def derive_snapshot(
    commit: str,
    base: Snapshot,
    changes: Iterable[RawChange],
    cache: ManifestCache,
    read_blob: BlobReader,
    blob_size: Callable[[str], int],
) -> Snapshot | None:
    """The snapshot of ``commit`` from the error-free snapshot of ``base.commit`` and git's raw changes
    between them (with modes): only the changed entries are classified and read. Equal to read_snapshot
    of the whole tree (entries it ignores leave no trace in a snapshot). None if ``base`` has errors
    (refused entries are not kept per path) or a change lacks its mode: read the whole tree then."""
    if base.errors:
        return None
    placed: dict[str, ParsedFile | FieldError] = dict(base.by_path)
    changes = list(changes)
    for change in changes:  # every removal first: a path renamed away may be the target of another rename
        if change.old_path is not None:
            placed.pop(change.old_path, None)
    for change in changes:
        if change.new_path is None:
            continue
        if change.new_mode is None or change.new_sha is None:
            return None
        path, mode, sha = change.new_path, change.new_mode, change.new_sha
        size = None if mode == MODE_SUBMODULE or not under_manifest_roots(path) else blob_size(sha)
        found = _place(TreeEntry(path, mode, sha, size), cache, read_blob)
        if found is not None:
            placed[path] = found
    return _checked(commit, placed, base.default_namespace, read_blob)


def _place(entry: TreeEntry, cache: ManifestCache, read_blob: BlobReader) -> ParsedFile | FieldError | None:
    """A tree entry's refusal, its parsed manifest, or None when it is ignored."""
    target = None
    if needs_link_target(entry) and (entry.size or 0) <= MAX_LINK_TARGET:
        target = read_blob(entry.sha).decode("utf-8", errors="replace")
    placement = classify(entry, target)
    if placement.verdict is Verdict.REFUSED:
        assert placement.error is not None
        return placement.error
    if placement.verdict is Verdict.MANIFEST:
        return cache.get(entry.path, entry.sha, read_blob)
    return None


def _checked(commit: str, placed: dict[str, ParsedFile | FieldError], default_namespace: str, read_blob: BlobReader) -> Snapshot:
    """The snapshot of placed entries in path order, with the cross-file checks (located in their files)."""
    errors: list[FieldError] = []
    files: list[ParsedFile] = []
    for path in sorted(placed):
        found = placed[path]
        if isinstance(found, ParsedFile):
            files.append(found)
            errors.extend(found.errors)
        else:
            errors.append(found)
    apps = [o for f in files for o in f.objects if isinstance(o, KDApp)]
    clusters = [o for f in files for o in f.objects if isinstance(o, KDCluster)]
    cross = check_desired_set(apps, clusters, default_namespace=default_namespace)
    if cross:
        shas = {f.path: f.sha for f in files}
        errors.extend(locate(cross, lambda path: read_blob(shas[path]) if path in shas else None))
    return Snapshot(commit, tuple(files), tuple(errors), default_namespace)


def key_of(obj: Manifest, default_namespace: str) -> Key:
    """(namespace, name) with the default namespace filled in."""
    return (obj.namespace or default_namespace, obj.name)


def keyed(snapshot: Snapshot, default_namespace: str) -> tuple[dict[Key, KDApp], dict[Key, KDCluster]]:
    """Apps and clusters of a snapshot by key (first definition wins; lenient for bad commits)."""
    apps: dict[Key, KDApp] = {}
    clusters: dict[Key, KDCluster] = {}
    for _path, obj in snapshot.objects():
        target: dict[Key, Any] = apps if isinstance(obj, KDApp) else clusters
        target.setdefault(key_of(obj, default_namespace), obj)
    return dict(sorted(apps.items())), dict(sorted(clusters.items()))


def desired_from(snapshot: Snapshot, default_namespace: str, subject: str = "") -> DesiredState:
    """The desired state of an error-free snapshot (`subject`: its commit's); raises SourceError listing every
    error."""
    if snapshot.errors:
        raise SourceError(f"commit {snapshot.commit} refused: {len(snapshot.errors)} error(s)", snapshot.errors)
    apps, clusters = snapshot.by_key if default_namespace == snapshot.default_namespace else keyed(snapshot, default_namespace)
    return DesiredState(snapshot.commit, apps, clusters, subject)


def content(obj: object) -> object:
    """What makes two specs equal for change detection: every field except where it was read from."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return tuple((f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.name != "source")
    return obj
