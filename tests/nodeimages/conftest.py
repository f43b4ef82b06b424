"""Fixtures: the images built once per session into the shared cache (`built`: ref -> archive), and `rootfs`:
an image's archive unpacked into the test's temp folder (root required: chroot, unshare)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.nodeimages.build import build_all
from tests.nodeimages.unpacked import unpack


@pytest.fixture(scope="session")
def built() -> dict[str, Path]:
    return build_all()


@pytest.fixture
def rootfs(built: dict[str, Path], tmp_path: Path) -> Callable[[str], Path]:
    assert os.geteuid() == 0, "running the images' programs needs root (chroot, unshare): run the tests as root"

    def unpacked(ref: str) -> Path:
        return unpack(built[ref], tmp_path / ref.replace("/", "_").replace(":", "_"))

    return unpacked
