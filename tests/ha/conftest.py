"""The `pair` fixture of the record tests (test_source_record, test_record_safety): a world and its replicas."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ha.test_source_record import Pair


@pytest.fixture()
def pair(tmp_path: Path) -> Iterator[Pair]:
    pair = Pair(tmp_path)
    try:
        yield pair
    finally:
        pair.close()
