"""Git that cannot be read is visible and a corrupt cache heals: a real `gitops-kd run`, a real repo, the
embedded cluster. Also the instance object (GitOpsKDSource) as kubectl shows it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.controller.instance import NOT_READY_AFTER_FAILED_POLLS
from gitops_kd.status.source import PLURAL
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E, NS, git

LEASE = "gitops-kd"  # `gitops-kd run`'s default Lease name, which names the instance object


def source_object(world: E2E) -> dict[str, Any] | None:
    return world.rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, NS, LEASE)


def status(world: E2E) -> dict[str, Any]:
    return (source_object(world) or {}).get("status") or {}


def condition(world: E2E, type_: str) -> dict[str, Any] | None:
    return next((c for c in status(world).get("conditions") or () if c["type"] == type_), None)


def ready_at(world: E2E, commit: str) -> bool:
    ready = condition(world, "Ready")
    return status(world).get("lastAppliedRevision") == commit and ready is not None and ready["status"] == "True"


@pytest.fixture()
def world(tmp_path: Path) -> Iterator[tuple[E2E, RunProcess]]:
    world = E2E(tmp_path)
    proc = RunProcess("ctl", tmp_path, world.cluster.kubeconfig, str(world.repo), "--namespace", NS, "--no-leader-elect")
    try:
        world.wait_ready_at("1.0.0", timeout=120)
        head = git(world.repo, "rev-parse", "HEAD")
        wait_for("instance object Ready at the first commit", lambda: ready_at(world, head), 60)
        yield world, proc
    finally:
        proc.stop()
        world.close()


def test_kubectl_shows_revision_ready_message_and_waits_for_ready(world: tuple[E2E, RunProcess]) -> None:
    e2e, _ = world
    head = git(e2e.repo, "rev-parse", "HEAD")
    out = e2e.kubectl("get", "kdsrc", "-n", NS)
    assert out.returncode == 0, out.stderr
    header, row = out.stdout.splitlines()[:2]
    assert header.split()[:4] == ["NAME", "REVISION", "READY", "MESSAGE"], out.stdout
    assert row.split()[:3] == [LEASE, head, "True"] and f"Applied revision: main@sha1:{head[:12]}" in row, out.stdout
    waited = e2e.kubectl("wait", "--for=condition=Ready", f"gitopskdsource/{LEASE}", "-n", NS, "--timeout=30s")
    assert waited.returncode == 0 and "condition met" in waited.stdout, waited.stderr
    st = status(e2e)
    assert st["url"] == str(e2e.repo) and st["branch"] == "main" and st["forcePushBaseline"] == head
    assert st["lastAttemptedRevision"] == head and st["refusal"] == "" and st["lastAppliedSubject"] == "hello 1.0.0"


def corrupt_objects(git_dir: Path) -> int:
    """Overwrite every loose object and pack of the cache with garbage; the count overwritten."""
    count = 0
    for path in (git_dir / "objects").rglob("*"):
        if path.is_file() and path.parent.name != "info" and not path.name.endswith((".idx", ".rev")):
            os.chmod(path, 0o644)
            path.write_bytes(b"\x78garbage" * 8)
            count += 1
    return count


def test_corrupt_cache_is_recloned_and_the_next_commit_applied(world: tuple[E2E, RunProcess], tmp_path: Path) -> None:
    """Invariant: a corrupt local Git cache never stops new commits from being applied: it is detected, thrown
    away and cloned again (a log line, a GitCacheRecovered Event, cacheRecoveries in the instance status)."""
    e2e, proc = world
    assert corrupt_objects(tmp_path / "ctl-cache" / "repo.git") > 0
    (e2e.repo / "README.md").write_text("next commit\n")
    git(e2e.repo, "add", "-A")
    git(e2e.repo, "commit", "-q", "-m", "next commit")
    head = git(e2e.repo, "rev-parse", "HEAD")
    proc.poll_now()
    wait_for("the next commit applied after the cache was recloned", lambda: ready_at(e2e, head), 90)
    assert status(e2e)["cacheRecoveries"] >= 1
    assert "is corrupt, removing it and cloning" in proc.log()
    events = [e for e in e2e.rest.list("v1", "events", NS)["items"] if e["reason"] == "GitCacheRecovered"]
    assert events and events[0]["involvedObject"]["kind"] == "GitOpsKDSource", events
    assert proc.get("/readyz")[0] == 200 and proc.get("/healthz")[0] == 200


def test_unreadable_remote_turns_readiness_false_after_n_polls_and_back(world: tuple[E2E, RunProcess]) -> None:
    """Invariant: a repository that cannot be read is visible: after NOT_READY_AFTER_FAILED_POLLS failed polls
    /readyz is 503, the instance is Stalled (GitUnreadable) and the failing-polls gauge counts them, while
    /healthz stays 200 (a restart cannot fix Git); once Git reads again all of it returns to ready."""
    e2e, proc = world
    hidden = e2e.repo.with_name("repo-away")
    e2e.repo.rename(hidden)
    try:
        wait_for("/readyz 503", lambda: proc.get("/readyz")[0] == 503, 60)
        stalled = wait_for(
            "Stalled GitUnreadable", lambda: (c := condition(e2e, "Stalled")) and c["reason"] == "GitUnreadable" and c, 30
        )
        assert f"polls in a row could not read {e2e.repo}" in stalled["message"]
        assert status(e2e)["gitFailures"] >= NOT_READY_AFTER_FAILED_POLLS
        assert condition(e2e, "Ready")["status"] == "False"
        metrics = proc.get("/metrics")[1]
        value = next(float(line.split()[-1]) for line in metrics.splitlines() if line.startswith("gitops_kd_git_failing_polls "))
        assert value >= NOT_READY_AFTER_FAILED_POLLS
        assert proc.get("/healthz")[0] == 200
        assert [e for e in e2e.rest.list("v1", "events", NS)["items"] if e["reason"] == "GitUnreadable"]
    finally:
        hidden.rename(e2e.repo)
    wait_for("/readyz 200 again", lambda: proc.get("/readyz")[0] == 200, 60)
    head = git(e2e.repo, "rev-parse", "HEAD")
    wait_for("Ready again", lambda: ready_at(e2e, head), 30)
    assert status(e2e)["gitFailures"] == 0 and "is corrupt" not in proc.log()


def test_corrupt_cache_found_at_restart_is_recloned(world: tuple[E2E, RunProcess], tmp_path: Path) -> None:
    """Invariant: a corrupt local Git cache never wedges the controller, also when it is what a restart finds (the
    cache dir outlives the container): the record check at start clones it again instead of distrusting the
    record forever, and the next commit is applied."""
    e2e, proc = world
    proc.stop()
    assert corrupt_objects(tmp_path / "ctl-cache" / "repo.git") > 0
    (e2e.repo / "README.md").write_text("after the restart\n")
    git(e2e.repo, "add", "-A")
    git(e2e.repo, "commit", "-q", "-m", "after the restart")
    head = git(e2e.repo, "rev-parse", "HEAD")
    again = RunProcess("ctl", tmp_path, e2e.cluster.kubeconfig, str(e2e.repo), "--namespace", NS, "--no-leader-elect")
    try:
        wait_for("the next commit applied after a restart on a corrupt cache", lambda: ready_at(e2e, head), 90)
        assert "is corrupt, removing it and cloning" in again.log()
        assert "not planning" not in again.log()
        assert again.get("/readyz")[0] == 200 and again.get("/healthz")[0] == 200
    finally:
        again.stop()


BOGUS = "0123456789abcdef0123456789abcdef01234567"


def test_liveness_fails_once_the_controller_could_not_plan_for_the_bound(world: tuple[E2E, RunProcess], tmp_path: Path) -> None:
    """Invariant: a controller that cannot plan does not stay up looking alive: with its record untrusted (an
    applied commit Git does not have) /healthz answers 500 once --unhealthy-after seconds passed, so Kubernetes
    restarts it; deleting the record lets it re-establish it and liveness is 200 again."""
    e2e, proc = world
    proc.stop()
    e2e.rest.patch(ROLLOUT_API_VERSION, PLURAL, NS, LEASE, {"status": {"lastAppliedRevision": BOGUS}}, subresource="status")
    again = RunProcess(
        "ctl", tmp_path, e2e.cluster.kubeconfig, str(e2e.repo), "--namespace", NS, "--no-leader-elect", "--unhealthy-after", "3"
    )
    try:
        wait_for("the record distrusted", lambda: "not planning from" in again.log(), 60)
        wait_for("/healthz 500 after the bound", lambda: again.get("/healthz")[0] == 500, 30)
        assert again.get("/readyz")[0] == 503
        e2e.rest.delete(ROLLOUT_API_VERSION, PLURAL, NS, LEASE)
        wait_for("/healthz 200 once the record is re-established", lambda: again.get("/healthz")[0] == 200, 60)
    finally:
        again.stop()
