"""Simulated container images: named file trees materialised once as root filesystems, plus failure knobs.

Usage::

    images = store_for(cluster)                       # the cluster's store (state_dir/images or a temp dir)
    images.add("example.com/spark:3.5", {"/etc/spark/version": "3.5\\n", "/opt/run.sh": b"#!/bin/sh\\n"},
               behavior=ImageBehavior(ready_delay_seconds=1.0))
    root = images.rootfs("example.com/spark:3.5")     # Path to the materialised tree

Every image has /etc/os-release and /etc/image-ref (the ref) unless its files define them; an image
never added also gets /etc/<repo-basename>/version (the tag), so tags of one repository differ.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_READY_DELAY = 0.2


@dataclass(frozen=True)
class ImageBehavior:
    """How containers of an image behave: Ready after a delay (None: the cluster default), never, or crash."""

    ready_delay_seconds: float | None = None
    never_ready: bool = False
    crash_loop: bool = False


@dataclass(frozen=True)
class ImageRef:
    """A parsed image reference: `registry/repo/name:tag` or `...@sha256:digest`."""

    repository: str
    tag: str

    @classmethod
    def parse(cls, ref: str) -> ImageRef:
        if not ref or any(c.isspace() for c in ref):
            raise ValueError(f"invalid image reference {ref!r}: must be non-empty without whitespace")
        repo, tag = ref, "latest"
        if "@" in ref:
            repo, tag = ref.split("@", 1)
        else:
            last = ref.rsplit("/", 1)[-1]
            if ":" in last:
                repo, tag = ref.rsplit(":", 1)
        return cls(repo, tag)

    @property
    def basename(self) -> str:
        return self.repository.rsplit("/", 1)[-1]


def _dir_name(ref: str) -> str:
    return hashlib.sha256(ref.encode()).hexdigest()[:24]


def image_id(ref: str) -> str:
    """A stable fake imageID for container statuses: `<repo>@sha256:<digest of the ref>`."""
    return f"{ImageRef.parse(ref).repository}@sha256:{hashlib.sha256(ref.encode()).hexdigest()}"


class ImageStore:
    """Images by reference under `root`; each one materialised once as `root/<digest>/rootfs`."""

    def __init__(self, root: Path, *, default_ready_delay: float = DEFAULT_READY_DELAY) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.default_ready_delay = default_ready_delay
        self._lock = threading.Lock()
        self._files: dict[str, dict[str, bytes]] = {}
        self._behaviors: dict[str, ImageBehavior] = {}

    def add(self, ref: str, files: Mapping[str, str | bytes], *, behavior: ImageBehavior | None = None) -> None:
        """Define (or redefine) image `ref` with absolute file paths → content."""
        ImageRef.parse(ref)
        content: dict[str, bytes] = {}
        for path, data in files.items():
            if not path.startswith("/") or ".." in Path(path).parts:
                raise ValueError(f"image {ref}: file path {path!r} must be absolute without '..'")
            content[path] = data.encode() if isinstance(data, str) else bytes(data)
        with self._lock:
            self._files[ref] = content
            self._behaviors[ref] = behavior or ImageBehavior()
            target = self.root / _dir_name(ref)
            if target.exists():
                shutil.rmtree(target)
            self._materialise(ref, target)

    def behavior(self, ref: str) -> ImageBehavior:
        """The image's behaviour knobs: as added (by this process, or by another one into the same root: its
        image.json), else the defaults."""
        with self._lock:
            known = self._behaviors.get(ref)
            if known is None:
                known = self._behaviors[ref] = _saved_behavior(self.root / _dir_name(ref) / "image.json")
            return known

    def ready_delay(self, ref: str) -> float:
        delay = self.behavior(ref).ready_delay_seconds
        return self.default_ready_delay if delay is None else delay

    def set_behavior(self, ref: str, behavior: ImageBehavior) -> None:
        with self._lock:
            self._behaviors[ref] = behavior

    def rootfs(self, ref: str) -> Path:
        """The image's root filesystem (created on first use; treat it as read-only)."""
        with self._lock:
            target = self.root / _dir_name(ref)
            if not (target / "rootfs").is_dir():
                self._materialise(ref, target)
            return target / "rootfs"

    def _materialise(self, ref: str, target: Path) -> None:
        files = self._files.get(ref)
        if files is None:
            files = synthetic_files(ref)
        else:
            files = {**base_files(ref), **files}
        staging = Path(tempfile.mkdtemp(dir=self.root, prefix=".staging-"))
        rootfs = staging / "rootfs"
        for sub in ("etc", "tmp", "var", "root", "proc", "dev", "mnt", "opt", "home"):
            (rootfs / sub).mkdir(parents=True, exist_ok=True)
        for path, data in files.items():
            dest = rootfs / path.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            if data.startswith(b"#!"):
                dest.chmod(0o755)
        (staging / "image.json").write_text(
            json.dumps({"ref": ref, "behavior": asdict(self._behaviors.get(ref, ImageBehavior()))})
        )
        staging.rename(target)
        log.debug("image %s materialised at %s", ref, rootfs)


def _saved_behavior(path: Path) -> ImageBehavior:
    try:
        saved = json.loads(path.read_text())["behavior"]
        return ImageBehavior(**{k: v for k, v in saved.items() if k in ImageBehavior.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return ImageBehavior()


def base_files(ref: str) -> dict[str, bytes]:
    """Files every image has unless it defines them itself: /etc/os-release and /etc/image-ref."""
    return {"/etc/os-release": b'NAME="gitops-kd sim"\nID=sim\nVERSION_ID="1"\n', "/etc/image-ref": f"{ref}\n".encode()}


def synthetic_files(ref: str) -> dict[str, bytes]:
    """The files of an image nobody defined: the base files plus /etc/<repo-basename>/version (the tag)."""
    parsed = ImageRef.parse(ref)
    return {**base_files(ref), f"/etc/{parsed.basename}/version": f"{parsed.tag}\n".encode()}


_STORES: dict[int, ImageStore] = {}
_TEMP_DIRS: dict[int, Path] = {}
_STORES_LOCK = threading.RLock()


def store_for(cluster: Any) -> ImageStore:
    """The ImageStore of an EmbeddedCluster: `<state_dir>/images`, or under a temp dir (see sim_state_dir)."""
    with _STORES_LOCK:
        store = _STORES.get(id(cluster))
        if store is None:
            store = ImageStore(sim_state_dir(cluster) / "images")
            _STORES[id(cluster)] = store
        return store


def sim_state_dir(cluster: Any) -> Path:
    """Where the simulated node keeps files: the cluster's state_dir, or one temp dir per cluster."""
    state = getattr(cluster, "state_dir", None)
    if state is not None:
        return Path(state)
    with _STORES_LOCK:
        path = _TEMP_DIRS.get(id(cluster))
        if path is None:
            path = Path(tempfile.mkdtemp(prefix="gitops-kd-node-"))
            _TEMP_DIRS[id(cluster)] = path
        return path


def release(cluster: Any) -> None:
    """Forget the cluster's store; remove its temp dir if it had no state_dir (on cluster stop)."""
    with _STORES_LOCK:
        _STORES.pop(id(cluster), None)
        temp = _TEMP_DIRS.pop(id(cluster), None)
    if temp is not None:
        shutil.rmtree(temp, ignore_errors=True)
