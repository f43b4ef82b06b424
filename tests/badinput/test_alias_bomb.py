"""A small YAML file whose aliases repeat one large string thousands of times (an "alias bomb": 314 KB on disk,
about 1 GB once expanded) is refused by validate, plan and the running controller alike, before it is built."""

from __future__ import annotations

import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitops_kd.spec.limits import MAX_ANNOTATIONS_BYTES
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E, NS, git, hello_app

ROOT = Path(__file__).resolve().parents[2]
ALIASES = 4000
BIG = 250 * 1024  # the aliased string: within the 256 KiB string limit on its own
BOMB_REASON = "once its YAML aliases are expanded"
ANNOTATIONS_REASON = f"metadata.annotations: Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes"
CLI_PEAK_RSS = 400 * 1024 * 1024  # bytes: the CLI's whole peak (imports included) while refusing the bomb
CONTROLLER_PEAK_RSS = 400 * 1024 * 1024  # deploy/'s limit is 512Mi; the bomb took the controller to 1.3-3.8 GB


def alias_bomb() -> str:
    """hello 1.0.0 with ALIASES annotations all aliasing one BIG-byte string."""
    lines = ["  annotations:", f"    a0: &big {'x' * BIG}"] + [f"    a{i}: *big" for i in range(1, ALIASES)]
    return hello_app("1.0.0").replace("  name: hello\n", "  name: hello\n" + "\n".join(lines) + "\n", 1)


def big_annotations() -> str:
    """hello 1.0.0 with two plain 150 KB annotations: each string is allowed, their total is not."""
    lines = ["  annotations:"] + [f"    note{i}: {'y' * 150 * 1024}" for i in range(2)]
    return hello_app("1.0.0").replace("  name: hello\n", "  name: hello\n" + "\n".join(lines) + "\n", 1)


def cli(*args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """`gitops-kd <args>` in a new interpreter, and the peak RSS (bytes) of the largest child process so far."""
    proc = subprocess.run(
        [sys.executable, "-c", "from gitops_kd.cli import main; main()", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def peak_rss(pid: int) -> int:
    """VmHWM of a live process: its peak resident set, in bytes (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for pid {pid}")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2E]:
    world = E2E(tmp_path_factory.mktemp("aliasbomb"))
    try:
        yield world
    finally:
        world.close()


@pytest.mark.parametrize(
    ("text", "reason"),
    [(alias_bomb(), BOMB_REASON), (big_annotations(), ANNOTATIONS_REASON)],
    ids=["alias bomb", "annotations over 256 KiB"],
)
def test_validate_and_plan_refuse_naming_file_and_reason(world: E2E, tmp_path: Path, text: str, reason: str) -> None:
    """Invariant: validate and plan --base/--head apply the same limits as the API server to the expanded
    document (aliases counted with the size of what they repeat; annotations 256 KiB in all), refuse naming the
    file and reason, and stay within a bounded memory."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(world.repo), str(repo)], check=True)
    (repo / "apps" / "hello.yaml").write_text(text)
    assert len(text.encode()) < 400 * 1024
    git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qam", "hello with big annotations")
    validated, rss = cli("validate", str(repo))
    assert validated.returncode == 1, validated.stdout + validated.stderr
    assert "apps/hello.yaml" in validated.stdout + validated.stderr and reason in validated.stdout + validated.stderr
    planned, rss = cli("plan", "--repo", str(repo), "--base", "HEAD~1", "--head", "HEAD")
    out = planned.stdout + planned.stderr
    assert planned.returncode != 0 and "apps/hello.yaml" in out and reason in out, out
    assert "Traceback" not in out
    assert rss < CLI_PEAK_RSS, f"peak RSS {rss >> 20} MiB"


def test_the_controller_refuses_the_bomb_in_bounded_memory(world: E2E, tmp_path: Path) -> None:
    """Invariant: the controller refuses an alias-bomb commit (CommitRefused naming file and reason), stays up and
    ready, and its peak RSS stays far below deploy/'s 512Mi limit: the document is never expanded in memory."""
    proc = RunProcess("bomb", tmp_path, world.cluster.kubeconfig, str(world.repo), "--namespace", NS, "--no-leader-elect")
    try:
        world.wait_ready_at("1.0.0", timeout=120)
        world.commit({"apps/hello.yaml": alias_bomb()}, "hello with 4000 aliased annotations")
        proc.poll_now()
        refused = wait_for(
            "CommitRefused naming the alias expansion",
            lambda: [
                e
                for e in world.rest.list("v1", "events", NS)["items"]
                if e["reason"] == "CommitRefused" and BOMB_REASON in e["message"]
            ],
            60,
        )
        assert "apps/hello.yaml" in refused[0]["message"]
        assert proc.alive and proc.get("/healthz")[0] == 200 and proc.get("/readyz")[0] == 200
        assert peak_rss(proc.proc.pid) < CONTROLLER_PEAK_RSS, f"peak RSS {peak_rss(proc.proc.pid) >> 20} MiB"
    finally:
        proc.stop()
