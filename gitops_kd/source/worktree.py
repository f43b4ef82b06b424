"""A directory on disk checked as if it were a commit: same layout rules, parsing and cross-file checks."""

from __future__ import annotations

import os
from pathlib import Path

from gitops_kd.source.budget import Budget
from gitops_kd.source.layout import MODE_SUBMODULE, MODE_SYMLINK, TreeEntry
from gitops_kd.source.model import DesiredState
from gitops_kd.source.snapshot import ManifestCache, Snapshot, desired_from, read_snapshot

MODE_FILE = "100644"
_LINK, _FILE = "link:", "file:"


def tree_entries(root: Path) -> list[TreeEntry]:
    """What `git ls-tree -r -l` would list if the directory were committed as it is (hidden top-level
    entries such as .git/ are skipped: the layout ignores them). An entry's sha is a key for read_entry."""
    entries: list[TreeEntry] = []
    for top, dirs, files in os.walk(root):
        here = Path(top)
        rel_dir = here.relative_to(root)
        if rel_dir == Path("."):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            files = [f for f in files if not f.startswith(".")]
        for name in sorted(dirs):
            path = here / name
            if path.is_symlink():
                entries.append(_entry(root, path, MODE_SYMLINK))
            elif (path / ".git").exists():
                entries.append(TreeEntry((rel_dir / name).as_posix(), MODE_SUBMODULE, "", None))
        dirs[:] = sorted(d for d in dirs if not (here / d).is_symlink() and not (here / d / ".git").exists())
        for name in sorted(files):
            path = here / name
            entries.append(_entry(root, path, MODE_SYMLINK if path.is_symlink() else MODE_FILE))
    return entries


def _entry(root: Path, path: Path, mode: str) -> TreeEntry:
    rel = path.relative_to(root).as_posix()
    if mode == MODE_SYMLINK:
        return TreeEntry(rel, mode, _LINK + str(path), len(os.readlink(path)))
    return TreeEntry(rel, mode, _FILE + str(path), path.stat().st_size)


def read_entry(key: str) -> bytes:
    """The content of an entry listed by tree_entries: a file's bytes, or a symlink's target."""
    if key.startswith(_LINK):
        return os.readlink(key[len(_LINK) :]).encode()
    return Path(key[len(_FILE) :]).read_bytes()


def read_worktree(root: Path | str, default_namespace: str = "default", budget: Budget | None = None) -> Snapshot:
    """The snapshot of a directory, through the same read_snapshot (and commit budget) a commit goes through."""
    root = Path(root).resolve()
    entries = tree_entries(root)
    return read_snapshot(f"working tree {root}", entries, ManifestCache(), read_entry, default_namespace, budget or Budget())


def worktree_desired(root: Path | str, default_namespace: str = "default", budget: Budget | None = None) -> DesiredState:
    """The desired state of a directory; raises SourceError with every error, as for a commit."""
    return desired_from(read_worktree(root, default_namespace, budget), default_namespace)
