"""Informer (list+watch cache) against the embedded API server, including dropped watches and 410; WorkQueue."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from kubernetes import client
from workloads_util import wait_for

from kdsim.cluster import EmbeddedCluster
from kubeplumb.informer import Informer, object_key
from kubeplumb.workqueue import RequeueAfter, WorkQueue


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str | None]] = []
        self.lock = threading.Lock()

    def __call__(self, kind: str, obj: dict, old: dict | None) -> None:
        with self.lock:
            self.events.append((kind, obj["metadata"]["name"], (obj.get("data") or {}).get("v")))

    def seen(self, event: tuple[str, str, str | None]) -> bool:
        with self.lock:
            return event in self.events


@pytest.fixture
def configmaps(cluster: EmbeddedCluster, namespace: str) -> Iterator[tuple[Informer, Recorder, client.CoreV1Api]]:
    informer = Informer(cluster.api_client(), "v1", "configmaps", namespace=namespace, label_selector="team=a")
    recorder = Recorder()
    informer.add_handler(recorder)
    informer.start()
    assert informer.wait_synced(10)
    yield informer, recorder, client.CoreV1Api(cluster.api_client())
    informer.stop()


def _cm(name: str, v: str, team: str = "a") -> dict:
    return {"metadata": {"name": name, "labels": {"team": team}}, "data": {"v": v}}


def test_added_modified_deleted_and_cache(configmaps: tuple[Informer, Recorder, client.CoreV1Api], namespace: str) -> None:
    informer, rec, core = configmaps
    core.create_namespaced_config_map(namespace, _cm("one", "1"))
    core.create_namespaced_config_map(namespace, _cm("other", "x", team="b"))
    core.patch_namespaced_config_map("one", namespace, {"data": {"v": "2"}})
    wait_for(lambda: rec.seen(("MODIFIED", "one", "2")), what="MODIFIED one")
    assert rec.seen(("ADDED", "one", "1"))
    assert informer.get(namespace, "one")["data"] == {"v": "2"}
    assert informer.get(namespace, "other") is None  # filtered by the label selector
    assert [o["metadata"]["name"] for o in informer.list(namespace, {"team": "a"})] == ["one"]
    core.delete_namespaced_config_map("one", namespace)
    wait_for(lambda: rec.seen(("DELETED", "one", "2")), what="DELETED one")
    assert informer.get(namespace, "one") is None


def test_recovers_after_watches_are_dropped(
    cluster: EmbeddedCluster, configmaps: tuple[Informer, Recorder, client.CoreV1Api], namespace: str
) -> None:
    informer, rec, core = configmaps
    core.create_namespaced_config_map(namespace, _cm("a1", "1"))
    wait_for(lambda: rec.seen(("ADDED", "a1", "1")))
    # the next re-watches fail, so this change happens while the informer is disconnected
    cluster.faults.add("error", verb="watch", resource="configmaps", count=2)
    assert cluster.faults.drop_watches() >= 1
    core.patch_namespaced_config_map("a1", namespace, {"data": {"v": "2"}})
    wait_for(lambda: rec.seen(("MODIFIED", "a1", "2")), what="change made during the outage")
    core.create_namespaced_config_map(namespace, _cm("a2", "1"))
    wait_for(lambda: rec.seen(("ADDED", "a2", "1")), what="events after reconnecting")


def test_relists_after_410_and_sees_deletions(
    cluster: EmbeddedCluster,
    configmaps: tuple[Informer, Recorder, client.CoreV1Api],
    namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    informer, rec, core = configmaps
    # capture from the start: under load the relist can happen before the deletes below return
    caplog.set_level("INFO", logger="kubeplumb.informer")
    core.create_namespaced_config_map(namespace, _cm("b1", "1"))
    wait_for(lambda: informer.get(namespace, "b1") is not None)
    # a write the informer does not see (filtered out), so its resourceVersion falls behind the compaction
    core.create_namespaced_config_map(namespace, _cm("unseen", "1", team="b"))
    cluster.faults.add("error", verb="watch", resource="configmaps", count=2)
    cluster.store.compact()  # the informer's resourceVersion is now too old: its re-watch gets 410 Expired
    cluster.faults.drop_watches()
    core.delete_namespaced_config_map("b1", namespace)
    core.create_namespaced_config_map(namespace, _cm("b2", "1"))
    wait_for(lambda: rec.seen(("DELETED", "b1", "1")) and rec.seen(("ADDED", "b2", "1")), what="relist diff")
    assert [o["metadata"]["name"] for o in informer.list()] == ["b2"]
    assert any(
        "expired; relisting" in r.getMessage() and r.name == "kubeplumb.informer" and "configmaps" in r.getMessage()
        for r in caplog.records
    )


def test_workqueue_dedupes_and_retries_with_backoff() -> None:
    calls: list[tuple[str, float]] = []
    failures = {"flaky": 2}
    gate = threading.Event()

    def reconcile(key: str) -> None:
        calls.append((key, time.monotonic()))
        if key == "slow":
            gate.wait(5)
        if failures.get(key, 0) > 0:
            failures[key] -= 1
            raise RuntimeError("transient")
        if key == "later" and sum(1 for k, _ in calls if k == "later") == 1:
            raise RequeueAfter(0.2)

    queue = WorkQueue(reconcile, name="test", workers=2, base_delay=0.05)
    queue.start()
    try:
        queue.add("slow")
        wait_for(lambda: any(k == "slow" for k, _ in calls))
        for _ in range(5):
            queue.add("slow")  # while processing: queued exactly once more
        queue.add("flaky")
        queue.add("later")
        gate.set()
        wait_for(lambda: sum(1 for k, _ in calls if k == "flaky") == 3, what="flaky retried twice")
        wait_for(lambda: sum(1 for k, _ in calls if k == "later") == 2, what="requeued key")
        wait_for(lambda: sum(1 for k, _ in calls if k == "slow") == 2)
        time.sleep(0.3)  # negative check: no extra runs appear
        assert sum(1 for k, _ in calls if k == "slow") == 2
        flaky = [t for k, t in calls if k == "flaky"]
        assert flaky[2] - flaky[1] >= 0.09  # second retry waited base_delay * 2
        later = [t for k, t in calls if k == "later"]
        assert later[1] - later[0] >= 0.19
    finally:
        queue.stop()


def test_workqueue_keeps_one_timer_per_key() -> None:
    """Invariant: a key that re-arms itself (RequeueAfter) runs on one timer, however often it was also added for
    later: each add_after keeps the earlier time (client-go's delaying queue), so idle resyncs cannot multiply."""
    runs: dict[str, list[float]] = {"tick": [], "once": []}

    def reconcile(key: str) -> None:
        runs[key].append(time.monotonic())
        if key == "tick":
            raise RequeueAfter(0.2)

    queue = WorkQueue(reconcile, name="test", workers=2)
    queue.start()
    try:
        t0 = time.monotonic()
        queue.add_after("once", 0.6)
        queue.add_after("once", 0.05)  # earlier: wins, and the 0.6 timer is dropped
        queue.add_after("tick", 0.05)
        queue.add_after("tick", 0.12)  # later than the waiting one: dropped (it would start a second chain)
        wait_for(lambda: len(runs["tick"]) >= 6, what="six runs of the self-requeueing key")
        ticks = runs["tick"]
        assert [round(b - a, 2) for a, b in zip(ticks, ticks[1:]) if b - a < 0.19] == []
        assert runs["once"] and runs["once"][0] - t0 < 0.5
        wait_for(lambda: time.monotonic() - t0 > 0.8, what="past the dropped 0.6 s timer")
        assert len(runs["once"]) == 1
    finally:
        queue.stop()


def test_object_key() -> None:
    assert object_key({"metadata": {"namespace": "ns", "name": "x"}}) == "ns/x"
    assert object_key({"metadata": {"name": "node"}}) == "node"


def test_lists_in_pages_and_transforms_each_object(cluster: EmbeddedCluster, namespace: str) -> None:
    """A list longer than one page (here 2 objects) is read whole, page by page, and the watch that follows
    misses nothing; every cached object and every handler sees what the transform made of it."""
    core = client.CoreV1Api(cluster.api_client())
    for i in range(5):
        core.create_namespaced_config_map(namespace, _cm(f"p{i}", str(i)))
    informer = Informer(
        cluster.api_client(),
        "v1",
        "configmaps",
        namespace=namespace,
        label_selector="team=a",
        list_page=2,
        transform=lambda o: {"metadata": o["metadata"], "data": {"v": o["data"]["v"] * 2}},
    )
    rec = Recorder()
    informer.add_handler(rec)
    informer.start()
    try:
        assert informer.wait_synced(10)
        assert [(o["metadata"]["name"], o["data"]["v"]) for o in informer.list(namespace)] == [
            (f"p{i}", str(i) * 2) for i in range(5)
        ]
        core.patch_namespaced_config_map("p4", namespace, {"data": {"v": "9"}})
        wait_for(lambda: rec.seen(("MODIFIED", "p4", "99")), what="MODIFIED p4 transformed")
        assert rec.seen(("ADDED", "p0", "00"))
    finally:
        informer.stop()
