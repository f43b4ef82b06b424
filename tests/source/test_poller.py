"""Poller: scheduled polls fire, trigger_now polls at once, polls never overlap, failures survive."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from gitops_kd.source import GitSource, Poller, PollResult

from .conftest import WorkRepo, app_yaml

HELLO = ("default", "hello")


def test_poller_fires_on_start_and_on_interval(repo: WorkRepo, tmp_path: Path) -> None:
    seen: list[PollResult] = []
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        poller = Poller(source, seen.append, interval=0.2)
        with poller:
            assert poller.wait_for_polls(3, timeout=15)
        assert not poller.running
        assert seen[0].accepted and seen[0].changed
        assert all(not r.changed for r in seen[1:])


def test_trigger_now_polls_immediately(repo: WorkRepo, tmp_path: Path) -> None:
    seen: list[PollResult] = []
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        poller = Poller(source, seen.append, interval=3600)
        with poller:
            assert poller.wait_for_polls(1, timeout=15)
            repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0"))
            new = repo.commit("2.0.0")
            poller.trigger_now()
            assert poller.wait_for_polls(2, timeout=15)
        assert seen[-1].commit == new and seen[-1].changed
        assert seen[-1].desired.apps[HELLO].version == "2.0.0"


def test_trigger_before_start_is_an_error(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        with pytest.raises(RuntimeError, match="not started"):
            Poller(source, lambda r: None).trigger_now()


class _SlowFlakySource:
    """Wraps a GitSource: the 2nd poll raises, every poll is slow, overlap is recorded."""

    def __init__(self, inner: GitSource) -> None:
        self.inner = inner
        self.url = inner.url
        self.calls = 0
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    @property
    def last_good(self):
        return self.inner.last_good

    def poll(self) -> PollResult:
        with self._lock:
            self.calls += 1
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            call = self.calls
        try:
            time.sleep(0.05)  # make overlap likely if the poller allowed it
            if call == 2:
                raise RuntimeError("boom")
            return self.inner.poll()
        finally:
            with self._lock:
                self.active -= 1


def test_exceptions_survive_and_polls_never_overlap(repo: WorkRepo, tmp_path: Path) -> None:
    seen: list[PollResult] = []

    def callback(result: PollResult) -> None:
        seen.append(result)
        if len(seen) == 3:
            raise ValueError("callback bug")

    with GitSource(repo.url, "main", tmp_path / "cache") as inner:
        source = _SlowFlakySource(inner)
        poller = Poller(source, callback, interval=0.05)
        with poller:
            for _ in range(5):
                poller.trigger_now()
            threads = [threading.Thread(target=poller.poll_once) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(15)
            assert poller.wait_for_polls(6, timeout=15)
        assert source.max_active == 1
        failed = seen[1]
        assert not failed.accepted and "poll failed: boom" in failed.errors[0].reason
        assert failed.desired == seen[0].desired  # last good kept
        assert seen[-1].accepted  # still polling after both the poll and the callback raised


def test_interval_must_be_positive(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        with pytest.raises(ValueError, match="interval"):
            Poller(source, lambda r: None, interval=0)
