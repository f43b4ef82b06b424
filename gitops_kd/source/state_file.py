"""The small JSON state file in the cache dir that remembers the last applied commit across restarts."""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

STATE_FILE_NAME = "gitops-kd-source.json"
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


@dataclass(frozen=True)
class SourceState:
    """What a GitSource persists: which url and branch it follows and the last applied commit."""

    url: str
    branch: str
    applied_commit: str | None = None


def load_state(path: Path) -> SourceState | None:
    """Read the state file; None if missing. A corrupt file is logged and treated as missing."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("%s: unreadable state file, ignoring it: %s", path, exc)
        return None
    if not isinstance(raw, dict):
        log.warning("%s: state file is not a JSON object, ignoring it", path)
        return None
    applied = raw.get("applied_commit")
    if applied is not None and (not isinstance(applied, str) or not _SHA.match(applied)):
        log.warning("%s: applied_commit %r is not a commit sha, ignoring it", path, applied)
        applied = None
    return SourceState(str(raw.get("url", "")), str(raw.get("branch", "")), applied)


def save_state(path: Path, state: SourceState) -> None:
    """Write the state file atomically (write a temp file, fsync, rename)."""
    tmp = path.with_name(path.name + ".tmp")
    data = json.dumps({"url": state.url, "branch": state.branch, "applied_commit": state.applied_commit}, indent=2) + "\n"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
