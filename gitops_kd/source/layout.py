"""Repo layout rules: which tree entries are manifests, which are ignored, which refuse the commit."""

from __future__ import annotations

import enum
import posixpath
from dataclasses import dataclass

from gitops_kd.spec import FieldError
from gitops_kd.spec.limits import file_size_error

MANIFEST_SUFFIXES: tuple[str, ...] = (".yaml", ".yml", ".json")
MANIFEST_ROOTS: tuple[str, ...] = ("apps", "clusters")
IGNORED_ROOTS: tuple[str, ...] = ("examples", "docs")

MODE_SYMLINK = "120000"
MODE_SUBMODULE = "160000"


@dataclass(frozen=True)
class TreeEntry:
    """One non-tree entry of a commit's tree, as `git ls-tree -r -l` lists it."""

    path: str
    mode: str
    sha: str
    size: int | None  # None for submodules (gitlinks)

    @property
    def is_symlink(self) -> bool:
        return self.mode == MODE_SYMLINK

    @property
    def is_submodule(self) -> bool:
        return self.mode == MODE_SUBMODULE


class Verdict(enum.Enum):
    """What the source does with one tree entry."""

    MANIFEST = "manifest"
    IGNORED = "ignored"
    REFUSED = "refused"


@dataclass(frozen=True)
class Placement:
    """The verdict for one entry; `error` is set exactly when the verdict is REFUSED."""

    verdict: Verdict
    error: FieldError | None = None


IGNORED = Placement(Verdict.IGNORED)
MANIFEST = Placement(Verdict.MANIFEST)


def _root(path: str) -> str:
    return path.split("/", 1)[0]


def is_manifest_name(path: str) -> bool:
    """True if the file name has a manifest suffix (.yaml, .yml, .json; any case)."""
    return path.lower().endswith(MANIFEST_SUFFIXES)


def under_manifest_roots(path: str) -> bool:
    """True for apps/ and clusters/ themselves and anything below them."""
    return _root(path) in MANIFEST_ROOTS


def symlink_escapes(path: str, target: str) -> bool:
    """True if a symlink at `path` pointing to `target` is absolute or resolves outside the repo."""
    if not target or target.startswith("/"):
        return True
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    return resolved == ".." or resolved.startswith("../")


def needs_link_target(entry: TreeEntry) -> bool:
    """True if classify() needs the symlink's target to word its refusal."""
    return entry.is_symlink and under_manifest_roots(entry.path)


def classify(entry: TreeEntry, link_target: str | None = None) -> Placement:
    """Decide what to do with one tree entry (pure; `link_target` only for symlinks under the roots).

    Rules: everything under examples/ and docs/ is ignored, and so is every hidden top-level entry
    (.github/, .gitlab-ci.yml, .pre-commit-config.yaml: CI and tool configuration); a manifest
    (*.yaml, *.yml, *.json) outside apps/ and clusters/ is refused; other files outside them are ignored. Under apps/ and
    clusters/: every symlink and submodule is refused, non-manifest files are ignored, and a
    manifest larger than MAX_FILE_BYTES is refused.
    """
    path = entry.path
    root = _root(path)
    if root in IGNORED_ROOTS or root.startswith("."):
        return IGNORED
    if root not in MANIFEST_ROOTS:
        if is_manifest_name(path):
            return _refuse(path, "manifest outside apps/ and clusters/")
        return IGNORED
    if entry.is_symlink:
        target = link_target if link_target is not None else "?"
        if symlink_escapes(path, target):
            return _refuse(path, f"symlink to {target!r} leaves the repository")
        return _refuse(
            path, f"symlink to {target!r} refused: symlinks are not allowed under apps/ and clusters/ (commit the file itself)"
        )
    if entry.is_submodule:
        return _refuse(path, "submodules are not allowed under apps/ and clusters/")
    if not is_manifest_name(path):
        return IGNORED
    too_big = file_size_error(path, entry.size) if entry.size is not None else None
    if too_big is not None:
        return _refuse(path, too_big.reason)
    return MANIFEST


def relevant(path: str) -> bool:
    """True if a path could matter to the desired state (used to filter change sets)."""
    root = _root(path)
    if root in IGNORED_ROOTS or root.startswith("."):
        return False
    return root in MANIFEST_ROOTS or is_manifest_name(path)


def _refuse(path: str, reason: str) -> Placement:
    return Placement(Verdict.REFUSED, FieldError(path, "", reason))
