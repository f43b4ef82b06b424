"""Bounded work per commit: a real `gitops-kd run` on the embedded cluster and the real `gitops-kd validate` against a
commit of 40 identical 1 MiB manifests (one Git blob, a small push, 40 MiB to parse): refused before parsing, naming
the budget, the size and the biggest files, and the next commit lands."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.source.budget import MAX_COMMIT_BYTES
from gitops_kd.spec.limits import MAX_FILE_BYTES
from gitops_kd.status.source import PLURAL
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E, NS, ROOT

LEASE = "gitops-kd"
COPIES = 40
VALIDATE_COPIES = 200
FAST = 30.0  # seconds: far below what parsing 40 MiB takes (minutes), far above listing a tree


def big_manifest() -> str:
    """Exactly MAX_FILE_BYTES of YAML that is slow to parse: one mapping of many short keys."""
    lines, size, i = [], 0, 0
    while size + 12 <= MAX_FILE_BYTES:
        line = f"k{i:08d}: 1\n"  # 12 bytes
        lines.append(line)
        size += len(line)
        i += 1
    text = "".join(lines)
    return text + "#" * (MAX_FILE_BYTES - len(text))


def status(world: E2E) -> dict[str, Any]:
    obj = world.rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, NS, LEASE) or {}
    return obj.get("status") or {}


def stalled_refused(world: E2E) -> str | None:
    cond = next((c for c in status(world).get("conditions") or () if c["type"] == "Stalled"), None)
    return cond["message"] if cond and cond["status"] == "True" and cond["reason"] == "CommitRefused" else None


@pytest.fixture()
def world(tmp_path: Path) -> Iterator[tuple[E2E, RunProcess]]:
    world = E2E(tmp_path)
    proc = RunProcess("ctl", tmp_path, world.cluster.kubeconfig, str(world.repo), "--namespace", NS, "--no-leader-elect")
    try:
        world.wait_ready_at("1.0.0", timeout=120)
        yield world, proc
    finally:
        proc.stop()
        world.close()


def test_a_commit_over_the_budget_is_refused_before_parsing_and_the_fix_lands(world: tuple[E2E, RunProcess]) -> None:
    """Invariant: one commit cannot stall the pipeline: 40 paths naming one 1 MiB blob (40 MiB to parse, over the
    default --max-commit-bytes) are refused as CommitRefused within seconds, naming the budget, the total and the
    biggest files; polling goes on, so the commit that removes them is applied."""
    e2e, proc = world
    body = big_manifest()
    started = time.monotonic()
    big = e2e.commit({f"apps/big-{i:02d}.yaml": body for i in range(COPIES)}, "forty copies of one big manifest")
    message = wait_for(
        "the big commit refused", lambda: status(e2e).get("lastAttemptedRevision") == big and stalled_refused(e2e), FAST
    )
    assert time.monotonic() - started < FAST
    found = re.search(r"(\d+) bytes of manifests after decompression", message)
    assert found is not None, message
    total = int(found.group(1))
    assert COPIES * MAX_FILE_BYTES < total < COPIES * MAX_FILE_BYTES + 64 * 1024, message  # + hello's own manifests
    assert f"over the budget of {MAX_COMMIT_BYTES} (--max-commit-bytes)" in message, message
    assert f"apps/big-00.yaml ({MAX_FILE_BYTES} bytes)" in message, message
    fix = e2e.commit({f"apps/big-{i:02d}.yaml": None for i in range(COPIES)}, "drop the big manifests")
    wait_for("the fix commit applied", lambda: status(e2e).get("lastAppliedRevision") == fix and not stalled_refused(e2e), FAST)
    assert proc.get("/healthz")[0] == 200


def test_validate_applies_the_same_budget_and_finishes_fast(tmp_path: Path) -> None:
    """Invariant: `validate` refuses what `run` refuses, as fast: 200 copies of a 1 MiB manifest (today minutes of
    parsing) exit 1 at once with the budget named; --max-commit-files names the file budget the same way."""
    for root in ("apps", "clusters"):
        (tmp_path / root).mkdir()
    body = big_manifest()
    for i in range(VALIDATE_COPIES):
        (tmp_path / "apps" / f"big-{i:03d}.yaml").write_text(body)
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", "from gitops_kd.cli import main; main()", "validate", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - started
    assert out.returncode == 1, out.stdout + out.stderr
    assert "(--max-commit-bytes)" in out.stdout and f"{VALIDATE_COPIES * MAX_FILE_BYTES} bytes" in out.stdout, out.stdout
    assert took < FAST, took
    small = subprocess.run(
        [sys.executable, "-c", "from gitops_kd.cli import main; main()", "validate", "--max-commit-files", "1", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert small.returncode == 1 and "(--max-commit-files)" in small.stdout, small.stdout
