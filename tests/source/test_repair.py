"""A corrupt local Git cache is thrown away and cloned again within the poll; an unreachable remote is not corruption."""

from __future__ import annotations

import os
from pathlib import Path

from gitops_kd.source import GitSource
from gitops_kd.source.repair import looks_corrupt

from .conftest import WorkRepo, app_yaml


def corrupt_loose_and_packed(git_dir: Path) -> int:
    count = 0
    for path in (git_dir / "objects").rglob("*"):
        if path.is_file() and path.parent.name != "info" and not path.name.endswith((".idx", ".rev")):
            os.chmod(path, 0o644)
            path.write_bytes(b"\x78not zlib" * 4)
            count += 1
    return count


def test_messages_of_an_unreadable_local_object_look_corrupt() -> None:
    assert looks_corrupt("error: inflate: data stream error (incorrect header check)")
    assert looks_corrupt("fatal: loose object 5b9b (stored in ./objects/5b/9b) is corrupt")
    assert looks_corrupt("fatal: bad object 5b9b5d15ff3bd8497a22de6cb18d1b04bf03241f")
    assert not looks_corrupt("fatal: '/tmp/x' does not appear to be a git repository")
    assert not looks_corrupt("fatal: Could not read from remote repository.")
    assert not looks_corrupt("fatal: Authentication failed for 'https://example.com/r.git/'")


def test_corrupt_cache_is_recloned_and_the_new_head_read(repo: WorkRepo, tmp_path: Path) -> None:
    """Invariant: corrupt objects in the cache never block a new commit: the poll that meets them reclones."""
    with GitSource(repo.url, "main", tmp_path / "cache") as src:
        assert src.poll().accepted
        assert corrupt_loose_and_packed(tmp_path / "cache" / "repo.git") > 0
        repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0"))
        head = repo.commit("two")
        result = src.poll()
        assert result.accepted and result.commit == head, result.errors
        assert result.desired is not None and result.desired.apps[("default", "hello")].version == "2.0.0"
        assert src.recoveries == 1 and "inflate" in src.last_recovery and src.failing_polls == 0


def test_unreadable_remote_counts_failed_polls_without_recloning(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as src:
        assert src.poll().accepted
        away = repo.path.with_name("away")
        repo.path.rename(away)
        for n in (1, 2, 3):
            assert not src.poll().accepted
            assert src.failing_polls == n and "git fetch failed" in src.last_error
        assert src.recoveries == 0
        away.rename(repo.path)
        assert src.poll().accepted and src.failing_polls == 0 and src.last_error == ""
