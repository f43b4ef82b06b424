"""The record keeper taking shard 0 while the fleet records a new commit: a real record object on the embedded
cluster, a real Git source (its fetch slowed by a real upload-pack) and real informers."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from gitops_kd.controller.instance import InstanceRecord
from gitops_kd.controller.record_keeper import RecordKeeper
from gitops_kd.observe.collector import Collector
from gitops_kd.source import GitSource
from gitops_kd.testing import wait_for
from tests.e2e.harness import E2E, git

NAME = "gitops-kd"
SLOW_FETCH = 2.0  # seconds each fetch of the keeper's Git source sleeps before git-upload-pack answers


def recorded(world: E2E) -> tuple[str, str]:
    status = world.rest.get("gitops-kd.io/v1alpha1", "gitopskdsources", world.ns, NAME).get("status") or {}
    return status.get("lastAppliedRevision", ""), status.get("forcePushBaseline", "")


def descends(repo: Path, ancestor: str, commit: str) -> bool:
    return subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", ancestor, commit]).returncode == 0


def test_a_commit_recorded_during_the_takeover_of_shard_0_keeps_the_record_consistent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Invariant: the record's forcePushBaseline descends from its lastAppliedRevision (a record where it does not is
    distrusted by every replica for good). The fleet records a commit under the planning lock while the keeper of a
    replica that just took shard 0 re-reads, re-checks (a slow Git fetch) and adopts the older record: that commit
    lands after the adoption, never under it with the older baseline written on top."""
    world = E2E(tmp_path / "world", persist=False)
    try:
        url, api = f"file://{world.repo}", world.backend.api_client()
        first = git(world.repo, "rev-parse", "HEAD")
        previous = InstanceRecord(api, namespace=world.ns, name=NAME, url=url, branch="main")  # shard 0's last holder
        previous.load()
        previous.update(applied=first, baseline=first)
        second = world.commit({"README.extra": "a newer commit\n"}, "newer")

        monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
        monkeypatch.setenv("GIT_CONFIG_KEY_0", "remote.origin.uploadpack")
        fetching = tmp_path / "fetching"  # created as each fetch starts, after the keeper re-read the record
        monkeypatch.setenv("GIT_CONFIG_VALUE_0", f"touch {fetching}; sleep {SLOW_FETCH}; git-upload-pack")
        source = GitSource(url, "main", tmp_path / "cache", default_namespace=world.ns)
        collector = Collector(api, namespace=world.ns)
        collector.start()
        assert collector.wait_synced(30)
        record = InstanceRecord(api, namespace=world.ns, name=NAME, url=url, branch="main")
        planning = threading.Lock()  # what build_manager passes: the lock the fleet's choice of commit holds
        holds_shard_0, led = threading.Event(), threading.Event()
        keeper = RecordKeeper(
            record,
            source,
            collector,
            on_trusted=lambda: None,
            leads=holds_shard_0.is_set,
            on_lead=led.set,
            applied=lambda: first,
            serial=planning,
        )
        record.set_fence(keeper.writes)
        record.load()
        assert keeper.establish() and not keeper.leading  # a follower, trusting the record at the first commit
        fetching.unlink()
        keeper.start()
        try:
            holds_shard_0.set()
            wait_for("the keeper's Git fetch in its re-check after taking shard 0", fetching.exists, 30, 0.01)
            with planning:  # the fleet reconcile accepts the newer commit and records it (FleetReconciler._choose)
                record.update(applied=second, attempted=second, baseline=second)
            wait_for("the takeover of the record", led.is_set, 30, 0.05)
            wait_for("the newer commit in the record", lambda: recorded(world)[0] == second, 30, 0.05)
            applied, baseline = recorded(world)
            assert descends(world.repo, applied, baseline), f"baseline {baseline[:12]} not after applied {applied[:12]}"
        finally:
            keeper.stop()
            collector.stop()
            source.close()
    finally:
        world.close()
