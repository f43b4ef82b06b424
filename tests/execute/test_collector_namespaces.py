"""Collector over a set of namespaces: one set of informers per namespace, merged snapshot, routed reads."""

from __future__ import annotations

import threading
from pathlib import Path

import yaml

from gitops_kd.observe.collector import Collector, Expectation
from kubeplumb.rest import RestClient
from tests.kdcluster import embedded_cluster

ROOT = Path(__file__).resolve().parents[2]
KD = "kubedirector.hpe.com/v1beta1"
NAMESPACES = ("team-a", "team-b", "team-c")


def _app(namespace: str) -> dict:
    doc = yaml.safe_load((ROOT / "repo-template" / "apps" / "hello.yaml").read_text())
    doc["metadata"]["namespace"] = namespace
    return doc


def test_a_set_of_namespaces_is_observed_and_nothing_else(tmp_path: Path) -> None:
    with embedded_cluster(tmp_path / "cluster", controllers=False) as cluster:
        rest = RestClient(cluster.api_client())
        for ns in NAMESPACES:
            rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            rest.create(KD, "kubedirectorapps", ns, _app(ns))
        shard = Collector(cluster.api_client(), namespace={"team-a", "team-b"})
        single = Collector(cluster.api_client(), namespace="team-c")
        every = Collector(cluster.api_client(), namespace=None)
        seen: list[tuple[str, str]] = []
        added = threading.Event()

        def on_event(event: str, obj: dict, old: dict | None) -> None:
            seen.append((event, obj["metadata"]["namespace"]))
            if obj["metadata"]["namespace"] == "team-b" and event == "MODIFIED":
                added.set()

        shard.informers["apps"].add_handler(on_event)  # the surface drift watching attaches to
        collectors = (shard, single, every)
        for c in collectors:
            c.start()
        try:
            assert all(c.wait_synced(20) for c in collectors)
            assert set(shard.snapshot().apps) == {("team-a", "hello"), ("team-b", "hello")}
            assert set(single.snapshot().apps) == {("team-c", "hello")}
            assert {k[0] for k in every.snapshot().apps} >= set(NAMESPACES)
            assert shard.namespaces == frozenset({"team-a", "team-b"}) and every.namespaces is None
            assert shard.watches("team-b") and not shard.watches("team-c") and every.watches("team-c")
            assert shard.get("kubedirectorapps", "team-c", "hello") is None, "not watched"
            assert shard.get("kubedirectorapps", "team-b", "hello") is not None
            live = rest.get(KD, "kubedirectorapps", "team-b", "hello")
            live["metadata"].setdefault("labels", {})["touched"] = "yes"
            updated = rest.replace(KD, "kubedirectorapps", "team-b", "hello", live)
            rv = updated["metadata"]["resourceVersion"]
            assert shard.wait_for([Expectation("kubedirectorapps", "team-b", "hello", rv)], 10)
            assert added.wait(10)
            assert {ns for _, ns in seen} == {"team-a", "team-b"}
        finally:
            for c in collectors:
                c.stop()
