"""Telling a corrupt local Git cache from an unreachable remote, so a corrupt cache is thrown away and cloned again."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

CACHE_UNUSABLE = "local git cache unusable"
# What git (fetch, cat-file, rev-parse, ls-tree) prints when an object of the LOCAL repository cannot be read;
# an unreachable or refusing remote prints none of them.
CORRUPTION_MARKERS: tuple[str, ...] = (
    "inflate:",  # "inflate: data stream error (incorrect header check)"
    "bad object",  # "fatal: bad object <sha>"
    "unable to unpack",  # "unable to unpack <sha> header"
    "packfile",  # "packfile .../pack-x.pack does not match index", "cannot be accessed"
    "corrupt",  # "loose object <sha> (stored in ...) is corrupt", "corrupt tree"
    "object file",  # "object file .../objects/ab/cd... is empty"
    CACHE_UNUSABLE,  # gitpython cannot open the cache at all
    "did not send all necessary objects",  # fetch negotiated against objects the cache only thinks it has
)
FSCK_TIMEOUT = 300.0


class CacheCorrupt(Exception):
    """The local cache cannot be read; the message says what git reported."""


def looks_corrupt(message: str) -> bool:
    """True if a git error message names an unreadable local object (see CORRUPTION_MARKERS)."""
    lowered = message.lower()
    return any(marker in lowered for marker in CORRUPTION_MARKERS)


def fsck_problem(git_dir: Path) -> str:
    """The first problem `git fsck` finds in the cache ("" if it is sound); run only after an unexplained read error."""
    env = {**os.environ, "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
    try:
        proc = subprocess.run(
            ["git", "--git-dir", str(git_dir), "fsck", "--no-progress", "--no-dangling"],
            capture_output=True,
            text=True,
            env=env,
            timeout=FSCK_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"git fsck could not run: {exc}"
    if proc.returncode == 0:
        return ""
    lines = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
    return lines[0] if lines else f"git fsck exited {proc.returncode}"
