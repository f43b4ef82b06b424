"""Collector: the observed state built from informer caches of a live embedded cluster, and change callbacks."""

from __future__ import annotations

import threading
from typing import Any

from gitops_kd.execute import Executor
from gitops_kd.kd.layout import CLUSTER_LABEL
from gitops_kd.observe.collector import Collector, Expectation, observed_pod
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
            EnsureRollout(
                NS,
                "hello-dev",
                "hello",
                "9.0.0",
                "1.0.0",
                "c" * 40,
                "upgrade",
                obj["metadata"]["uid"],
                '{"roleOrder":["worker"]}',
            )
        )
        assert collector.wait_for(out.expect, 10)
        assert got.wait(10)
        rollout = collector.snapshot().clusters[(NS, "hello-dev")].rollout
        assert rollout is not None and rollout.target_version == "9.0.0" and rollout.phase == "Upgrading"
        assert rollout.from_upgrade is not None and rollout.from_upgrade.role_order == ("worker",)
        assert not collector.wait_for([Expectation("pods", NS, "no-such-pod", "1")], 0.2)
    finally:
        collector.stop()
    wait_for("callbacks recorded", lambda: seen)


def test_informers_hold_one_compact_frozen_copy_that_the_models_share(hello: Any) -> None:
    """Memory (issue 14): a cached Pod keeps only what the observed model reads, yet observes the same as the
    whole Pod; the models reference the informers' frozen objects (no second copy); equal strings of
    different objects are one object; get() still hands out plain mutable copies."""
    cluster, rest, _obj = hello
    collector = Collector(cluster.api_client(), namespace=NS)
    collector.start()
    try:
        assert collector.wait_synced(20)
        live = collector.snapshot().clusters[(NS, "hello-dev")]
        pod = live.role_pods("worker")[0]
        full = rest.get("v1", "pods", NS, pod.name)
        cached = next(p for p in collector.informers["pods"].shared(NS) if p["metadata"]["name"] == pod.name)
        assert full["spec"].get("initContainers") and full["spec"].get("volumes")
        assert set(cached["spec"]) == {"containers"} and "initContainers" not in cached["spec"]
        assert set(cached["status"]) <= {"phase", "conditions", "podIP"}
        if full["metadata"]["resourceVersion"] == cached["metadata"]["resourceVersion"]:
            assert observed_pod(full) == observed_pod(cached) == pod
        kd = next(c for c in collector.informers["clusters"].shared(NS) if c["metadata"]["name"] == "hello-dev")
        assert live.raw is kd
        sts = {s["metadata"]["name"]: s for s in collector.informers["statefulsets"].shared(NS)}
        for role, model in live.statefulsets.items():
            assert model.raw is sts[model.name] and model.template is sts[model.name]["spec"]["template"], role
        labels = [s.raw["metadata"]["labels"] for s in live.statefulsets.values()]
        keys = [next(k for k in lab if k == CLUSTER_LABEL) for lab in labels]
        assert keys[0] is keys[1] and labels[0][CLUSTER_LABEL] is labels[1][CLUSTER_LABEL]
        copy = collector.get("pods", NS, pod.name)
        assert type(copy) is dict and type(copy["metadata"]) is dict
        copy["metadata"]["name"] = "changed"
        assert collector.get("pods", NS, pod.name)["metadata"]["name"] == pod.name  # type: ignore[index]
    finally:
        collector.stop()
