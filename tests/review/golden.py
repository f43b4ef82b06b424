"""Golden files: compared exactly; UPDATE_GOLDEN=1 rewrites them. Commit shas are normalized to <sha>."""

from __future__ import annotations

import os
import re
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden"
_SHA = re.compile(r"\b[0-9a-f]{40}\b")


def normalize(text: str) -> str:
    return _SHA.sub("<sha>", text)


def check_golden(name: str, text: str) -> None:
    """Assert ``text`` (normalized) equals golden/``name``; with UPDATE_GOLDEN=1 write it instead."""
    path = GOLDEN / name
    got = normalize(text)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got)
        return
    assert path.exists(), f"golden {name} missing: run with UPDATE_GOLDEN=1"
    assert got == path.read_text(), f"output differs from golden/{name} (UPDATE_GOLDEN=1 regenerates it)"
