"""Untrusted text reaches a terminal as data: `gitops-kd validate` prints a file name holding escape sequences (and
other control characters) as visible escapes, in every output format. The real CLI on a real directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import ROOT

NAME = "\x1b[2J\x1b[31mevil\x1b]0;title\x07\u202e\r.yaml"  # clear screen, red, window title, bidi override, CR


def validate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from gitops_kd.cli import main; main()", "validate", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("fmt", ["text", "github", "json"])
def test_validate_prints_control_characters_of_a_file_name_escaped(tmp_path: Path, fmt: str) -> None:
    """Invariant: no control character of a file name reaches the terminal raw (ESC, BEL, CR, a bidi override), so a
    file cannot clear the screen, recolour, retitle or hide the error lines; the name is still shown, escaped."""
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / NAME).write_text("kind: [unclosed\n")
    out = validate("--format", fmt, str(tmp_path))
    assert out.returncode == 1, out.stdout + out.stderr
    printed = out.stdout + out.stderr
    for raw in ("\x1b", "\x07", "\u202e", "\r"):
        assert raw not in printed, (raw, printed)
    if fmt == "json":
        assert json.loads(out.stdout)["errors"][0]["file"].endswith(f"apps/{NAME}")  # JSON escapes it, keeps the name
    else:
        assert "\\x1b[2J\\x1b[31mevil\\x1b]0;title\\x07\\u202e" in printed, printed
