"""The image archives the real node imports: the sandbox image and hello 1.0.0 / 2.0.0, built offline by
tests/nodeimages (scripts/realnode-images), cached by content; built once per process."""

from __future__ import annotations

import functools
from pathlib import Path

from tests.nodeimages.build import build_all
from tests.nodeimages.facts import PAUSE_REF, containerd_name

SANDBOX_IMAGE = containerd_name(PAUSE_REF)  # containerd's sandbox_image: the name `ctr image import` gives it


@functools.cache
def node_images() -> tuple[Path, ...]:
    """Every archive the node needs (the sandbox image first)."""
    built = build_all()
    return (built[PAUSE_REF], *(path for ref, path in built.items() if ref != PAUSE_REF))
