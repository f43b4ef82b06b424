"""Fixture `e2e`: a fresh embedded cluster + Git repo from repo-template per test (controller not started)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import E2E


@pytest.fixture
def e2e(tmp_path: Path) -> Iterator[E2E]:
    world = E2E(tmp_path)
    try:
        yield world
    finally:
        world.close()
