"""Per-key reconciles (issue 14): a change of one app plans only the parts of its clusters, on several workers,
and still records the version being left on every user's KDRollout before the KDApp changes."""

from __future__ import annotations

import re
import threading
from datetime import datetime
from typing import Any

from gitops_kd.constants import ROLLOUT_API_VERSION, ROLLOUT_PLURAL
from gitops_kd.kd.layout import API_VERSION as KD_API
from gitops_kd.observed import ObservedState
from gitops_kd.plan.planner import plan
from gitops_kd.plan.result import Plan
from gitops_kd.spec.state import DesiredState
from gitops_kd.testing import wait_for
from tests.e2e.harness import E2E, NS, TEMPLATE, WriteLog, hello_app


class Recording:
    """The real planner, recording which part of the desired state each call planned."""

    def __init__(self) -> None:
        self.calls: list[tuple[bool, frozenset[tuple[str, str]]]] = []
        self.lock = threading.Lock()

    def __call__(self, desired: DesiredState, observed: ObservedState, *, now: datetime, partial: bool = False) -> Plan:
        with self.lock:
            self.calls.append((partial, frozenset(desired.clusters)))
        return plan(desired, observed, now=now, partial=partial)

    def take(self) -> list[tuple[bool, frozenset[tuple[str, str]]]]:
        with self.lock:
            out, self.calls = self.calls, []
            return out


def _cluster(name: str, app: str) -> str:
    text = (TEMPLATE / "clusters" / "hello-dev.yaml").read_text()
    return (
        text.replace("name: hello-dev", f"name: {name}").replace("app: hello", f"app: {app}").replace("members: 2", "members: 1")
    )


def _rollout_ready(e2e: E2E, name: str, version: str) -> Any:
    return e2e.wait_ready_at(version, name=name, timeout=120)


def test_one_app_change_plans_only_its_clusters_parts_and_records_every_user(e2e: E2E) -> None:
    bye = re.sub(r"(?m)^  name: hello$", "  name: bye", (TEMPLATE / "apps" / "hello.yaml").read_text())
    assert "name: bye" in bye
    e2e.commit(
        {
            "apps/bye.yaml": bye,
            "clusters/bye-dev.yaml": _cluster("bye-dev", "bye"),
            "clusters/hello-qa.yaml": _cluster("hello-qa", "hello"),
        },
        "a second app and a second hello cluster",
    )
    recording = Recording()
    e2e.start_controller(planner=recording, workers=3)
    assert e2e.controller is not None and e2e.controller.per_key and e2e.controller.workers == 3
    for name in ("hello-dev", "hello-qa", "bye-dev"):
        _rollout_ready(e2e, name, "1.0.0")
    wait_for("an empty fleet plan", lambda: (p := e2e.controller.last_plan) is not None and p.empty, 60)  # type: ignore[union-attr]
    recording.take()
    e2e.log.clear()
    rollout_writes = WriteLog(e2e.rest, ROLLOUT_API_VERSION, ROLLOUT_PLURAL)
    app_writes = WriteLog(e2e.rest, KD_API, "kubedirectorapps")

    e2e.commit({"apps/hello.yaml": hello_app("2.0.0")}, "hello 2.0.0")
    for name in ("hello-dev", "hello-qa"):
        _rollout_ready(e2e, name, "2.0.0")
    rollout_writes.stop()
    app_writes.stop()
    calls = recording.take()
    parts = [clusters for partial, clusters in calls if partial]
    whole = [clusters for partial, clusters in calls if not partial]
    bye_dev = (NS, "bye-dev")
    users = frozenset({(NS, "hello-dev"), (NS, "hello-qa")})
    # Invariant: each per-key plan holds one cluster, or one app with its users: never the fleet, never two apps.
    assert parts, "no per-key plan ran: the controller planned the whole fleet for every step"
    assert all(clusters <= users or clusters == {bye_dev} for clusters in parts), [sorted(c) for c in parts]
    for name in ("hello-dev", "hello-qa"):
        assert frozenset({(NS, name)}) in parts, f"cluster {name} was never planned alone"
    assert whole, "the fleet key never planned the new commit"
    assert not any("bye" in line for line in e2e.log), [line for line in e2e.log if "bye" in line]
    # Invariant (stock KubeDirector): the KDApp the clusters use is never written (KubeDirector holds it), and
    # every user's KDRollout records the version being left and the target's stanza when its attempt starts.
    assert app_writes.first("hello", lambda o: o["spec"]["version"] == "2.0.0") is None, "KDApp written at 2.0.0"
    for name in ("hello-dev", "hello-qa"):
        started = rollout_writes.first(name, lambda o: (o.get("status") or {}).get("targetVersion") == "2.0.0")
        assert started is not None, (name, e2e.log)
        [status] = [obj["status"] for rv, obj in rollout_writes.writes if rv == started]
        assert status["fromVersion"] == "1.0.0" and status["targetStanza"], status
    ro = e2e.rollout("bye-dev")
    assert ro is not None and ro["status"]["appVersion"] == "1.0.0"
    # The per-cluster view from the index holds what the fleet view holds (members settled: nothing moves).
    collector = e2e.controller.collector
    whole_view = collector.snapshot()
    part_view = collector.snapshot_of(users | {bye_dev}, ("hello", "bye"))
    assert set(part_view.apps) == set(whole_view.apps) == {(NS, "hello"), (NS, "bye")}
    for key in users | {bye_dev}:
        mine, theirs = part_view.clusters[key], whole_view.clusters[key]
        assert {r: [p.name for p in ps] for r, ps in mine.pods.items()} == {
            r: [p.name for p in ps] for r, ps in theirs.pods.items()
        }
        assert set(mine.statefulsets) == set(theirs.statefulsets) and mine.services == theirs.services
