"""A root filesystem as an in-memory tree of entries, and its reproducible layer tar (sorted, mtime 0, root-owned).

Usage::

    tree = Tree()
    tree.file("/opt/app/run", b"#!/bin/sh\\n", mode=0o755)   # parents become 0755 directories
    tree.symlink("/bin/sh", "busybox")
    tree.copy_from(unpacked_deb, "bin/busybox", "/bin/busybox")
    data = tree.tar()                                     # the same bytes for the same tree, always
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


@dataclass(frozen=True)
class Entry:
    """A directory, regular file or symbolic link of the tree."""

    kind: str  # "dir" | "file" | "symlink"
    mode: int = 0o755
    data: bytes = b""
    target: str = ""


def _key(path: str) -> str:
    clean = PurePosixPath("/" + path.lstrip("/"))
    if ".." in clean.parts:
        raise ValueError(f"image path {path!r} must not contain '..'")
    return str(clean).lstrip("/")


class Tree:
    """Paths (relative to the root, no leading slash) to entries; later writes of a path replace earlier ones."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}

    def dir(self, path: str, mode: int = 0o755) -> None:
        key = _key(path)
        if key:
            self._parents(key)
            self.entries[key] = Entry("dir", mode)

    def file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        key = _key(path)
        self._parents(key)
        self.entries[key] = Entry("file", mode, data.encode() if isinstance(data, str) else data)

    def symlink(self, path: str, target: str) -> None:
        key = _key(path)
        self._parents(key)
        self.entries[key] = Entry("symlink", 0o777, target=target)

    def copy_from(self, root: Path, source: str, path: str) -> None:
        """Copy one file or symlink of an unpacked tree (its mode kept; a symlink stays a symlink)."""
        src = root / source.lstrip("/")
        info = src.lstat()
        if stat.S_ISLNK(info.st_mode):
            self.symlink(path, os.readlink(src))
        elif stat.S_ISREG(info.st_mode):
            self.file(path, src.read_bytes(), stat.S_IMODE(info.st_mode))
        else:
            raise ValueError(f"{src}: neither a regular file nor a symlink")

    def has(self, path: str) -> bool:
        return _key(path) in self.entries

    def _parents(self, key: str) -> None:
        parent = PurePosixPath(key).parent
        while str(parent) not in ("", "."):
            existing = self.entries.get(str(parent))
            if existing is not None and existing.kind != "dir":
                raise ValueError(f"image path {key!r}: its parent {parent} is a {existing.kind}")
            if existing is None:
                self.entries[str(parent)] = Entry("dir", 0o755)
            parent = parent.parent

    def tar(self) -> bytes:
        """The layer: every entry in sorted order (a parent before its children), mtime 0, uid/gid 0."""
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
            for key in sorted(self.entries):
                entry = self.entries[key]
                info = tarfile.TarInfo(key)
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "root", "root"
                info.mode = entry.mode
                if entry.kind == "dir":
                    info.type = tarfile.DIRTYPE
                    tar.addfile(info)
                elif entry.kind == "symlink":
                    info.type, info.linkname = tarfile.SYMTYPE, entry.target
                    tar.addfile(info)
                else:
                    info.size = len(entry.data)
                    tar.addfile(info, io.BytesIO(entry.data))
        return out.getvalue()
