"""Collector: the observed state built from informer caches of a live embedded cluster, and change callbacks."""

from __future__ import annotations

import threading
from typing import Any

from gitops_kd.execute import Executor
from gitops_kd.observe.collector import Collector, Expectation
from gitops_kd.plan.actions import EnsureRollout
from tests.execute.conftest import NS, wait_for


def test_snapshot_groups_a_cluster_and_reports_changes(hello: Any) -> None:
    cluster, rest, obj = hello
    collector = Collector(cluster.api_client(), namespace=NS)
    seen: list[tuple[str, tuple[str, str]]] = []
    got = threading.Event()

    def on_change(kind: str, key: tuple[str, str]) -> None:
        seen.append((kind, key))
        if key == (NS, "hello-dev") and kind == "cluster":
            got.set()
    collector.on_change(on_change)
    collector.start()
    try:
        assert collector.wait_synced(20)
        state = collector.snapshot()
        live = state.clusters[(NS, "hello-dev")]
        assert live.uid == obj["metadata"]["uid"] and live.app == "hello" and live.kd_state == "configured"
        assert sorted(live.statefulsets) == ["controller", "worker"]
        assert [p.ordinal for p in live.role_pods("worker")] == [0, 1]
        assert all(p.revision and p.uid for p in live.all_pods())
        assert {s.role for s in live.member_services()} == {"worker"}
        assert (NS, "hello") in state.apps and state.apps[(NS, "hello")].version == "1.0.0"
        assert state.clusters_of_app(NS, "hello") == (live,)
        got.clear()
        out = Executor(cluster.api_client()).execute(
            EnsureRollout(NS, "hello-dev", "hello", "9.0.0", "1.0.0", "c" * 40, "upgrade", obj["metadata"]["uid"],
                          '{"roleOrder":["worker"]}'))
        assert collector.wait_for(out.expect, 10)
        assert got.wait(10)
        rollout = collector.snapshot().clusters[(NS, "hello-dev")].rollout
        assert rollout is not None and rollout.target_version == "9.0.0" and rollout.phase == "Upgrading"
        assert rollout.from_upgrade is not None and rollout.from_upgrade.role_order == ("worker",)
        assert not collector.wait_for([Expectation("pods", NS, "no-such-pod", "1")], 0.2)
    finally:
        collector.stop()
    wait_for("callbacks recorded", lambda: seen)
