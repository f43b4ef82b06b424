"""HA and the instance object: two `gitops-kd run` replicas take turns on one cluster and one repo; what is
applied and the force-push baseline come from the GitOpsKDSource in the cluster, never from a replica's cache."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.status.source import PLURAL
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess, token_kubeconfig
from tests.e2e.harness import CLUSTER_LABEL, E2E, NS, ROLLOUT, git, hello_app
from tests.ha.test_failover import SYSTEM_NS, leader_of

LEASE = "gitops-kd"


class RolloutTargets:
    """Every spec.targetVersion the KDRollout hello-dev had, from a real watch (flips included)."""

    def __init__(self, world: E2E) -> None:
        listing = world.rest.list(ROLLOUT, "kdrollouts", NS)
        self.seen: list[str] = [i["spec"]["targetVersion"] for i in listing["items"] if i["metadata"]["name"] == "hello-dev"]
        self._stream = world.rest.watch(
            ROLLOUT, "kdrollouts", NS, resource_version=listing["metadata"]["resourceVersion"], timeout_seconds=600
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for event in self._stream:
            obj = event.get("object") or {}
            if event.get("type") in ("ADDED", "MODIFIED") and obj.get("metadata", {}).get("name") == "hello-dev":
                self.seen.append(obj["spec"]["targetVersion"])

    def stop(self) -> None:
        self._stream.close()


class Pair:
    """The world and the replicas started in it (all stopped at the end)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.world = E2E(tmp)
        self.world.rest.create(
            "v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}}
        )
        self.kubeconfig = token_kubeconfig(self.world.cluster, tmp / "sa.kubeconfig", "gitops-kd-sa")
        self.procs: list[RunProcess] = []

    def replica(self, name: str, env: dict[str, str] | None = None) -> RunProcess:
        proc = RunProcess(
            name,
            self.tmp,
            self.kubeconfig,
            str(self.world.repo),
            "--namespace",
            NS,
            "--leader-elect",
            env={"POD_NAMESPACE": SYSTEM_NS, **(env or {})},
        )
        self.procs.append(proc)
        return proc

    def leads(self, proc: RunProcess, timeout: float = 60) -> None:
        wait_for(f"{proc.name} leads", lambda: leader_of(self.world, [proc]) is proc, timeout)

    def status(self) -> dict[str, Any]:
        obj = self.world.rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, SYSTEM_NS, LEASE)
        return (obj or {}).get("status") or {}

    def condition(self, type_: str) -> dict[str, Any] | None:
        return next((c for c in self.status().get("conditions") or () if c["type"] == type_), None)

    def ready_at(self, commit: str, timeout: float = 120) -> None:
        def probe() -> bool:
            ready = self.condition("Ready")
            return self.status().get("lastAppliedRevision") == commit and ready is not None and ready["status"] == "True"

        wait_for(f"{LEASE} Ready at {commit[:12]}", probe, timeout)

    def head(self) -> str:
        return git(self.world.repo, "rev-parse", "HEAD")

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [
            e
            for e in self.world.rest.list("v1", "events", NS)["items"]
            if e["involvedObject"].get("name") == "hello-dev" and e.get("reason") == reason
        ]

    def pod_uids(self) -> set[str]:
        pods = self.world.rest.list("v1", "pods", NS, label_selector=f"{CLUSTER_LABEL}=hello-dev")["items"]
        return {p["metadata"]["uid"] for p in pods}

    def close(self) -> None:
        for proc in self.procs:
            proc.stop()
        self.world.close()


def slow_git(tmp: Path, seconds: int) -> dict[str, str]:
    """Environment for a replica whose every `git fetch` (through GitPython) first waits `seconds`."""
    wrapper = tmp / "slow-git"
    wrapper.write_text(f'#!/bin/sh\ncase "$*" in *fetch*) sleep {seconds};; esac\nexec git "$@"\n')
    wrapper.chmod(0o755)
    return {"GIT_PYTHON_GIT_EXECUTABLE": str(wrapper)}


def test_standby_with_an_older_cached_commit_never_downgrades(pair: Pair) -> None:
    """Invariant: a replica taking over never plans from a commit older than the cluster's lastAppliedRevision,
    whatever its own cache says and however slow its fetch: no DowngradeStarted Event, no pod replaced, the
    KDRollout never targets the older version."""
    b = pair.replica("replica-b")
    pair.leads(b)
    pair.world.wait_ready_at("1.0.0", timeout=120)
    first = pair.head()
    pair.ready_at(first)
    assert b.stop() == 0
    state = json.loads((pair.tmp / "replica-b-cache" / "gitops-kd-source.json").read_text())
    assert state["applied_commit"] == first  # replica-b's cache will hold the older commit

    a = pair.replica("replica-a")
    pair.leads(a)
    second = pair.world.commit({"apps/hello.yaml": hello_app("2.0.0")}, "hello 2.0.0")
    a.poll_now()
    pair.world.wait_ready_at("2.0.0", timeout=180)
    pair.ready_at(second)
    uids = pair.pod_uids()
    targets = RolloutTargets(pair.world)
    try:
        a.kill()  # the leader dies; replica-b comes back with its stale cache and a slow fetch
        b = pair.replica("replica-b", env=slow_git(pair.tmp, 5))
        pair.leads(b, timeout=60)
        wait_for("replica-b reconciling, Git polled (ready)", lambda: b.get("/readyz")[0] == 200, 90)
        pair.ready_at(second, timeout=60)
    finally:
        targets.stop()
    assert "the cluster records applied commit " + second in b.log(), b.log()[-3000:]
    assert not pair.events("DowngradeStarted"), "the cluster was downgraded"
    assert pair.pod_uids() == uids, "a pod was replaced after the takeover"
    assert "1.0.0" not in targets.seen, targets.seen
    assert pair.status()["lastAppliedRevision"] == second


def test_force_push_refused_by_a_replica_with_an_empty_cache(pair: Pair) -> None:
    """Invariant: force-push protection survives failover: once the leader recorded the baseline, a replica
    with an empty cache refuses a branch head that does not descend from it (nothing of it is applied)."""
    a = pair.replica("replica-a")
    pair.leads(a)
    pair.world.wait_ready_at("1.0.0", timeout=120)
    first = pair.head()
    pair.ready_at(first)
    (pair.world.repo / "README.md").write_text("seen by the leader\n")
    git(pair.world.repo, "add", "-A")
    git(pair.world.repo, "commit", "-q", "-m", "seen by the leader")
    seen = pair.head()
    a.poll_now()
    wait_for("baseline recorded", lambda: pair.status().get("forcePushBaseline") == seen, 60)
    assert a.stop() == 0

    git(pair.world.repo, "reset", "-q", "--hard", first)
    rewritten = pair.world.commit({"apps/hello.yaml": hello_app("2.0.0")}, "rewritten: hello 2.0.0")
    b = pair.replica("replica-b")  # a new cache dir: it has never seen the branch
    assert not (pair.tmp / "replica-b-cache" / "repo.git").exists()
    pair.leads(b)

    def refused() -> dict[str, Any] | None:
        stalled = pair.condition("Stalled")
        st = pair.status()
        return (
            stalled if stalled and stalled["reason"] == "CommitRefused" and st.get("lastAttemptedRevision") == rewritten else None
        )

    stalled = wait_for("the rewritten head refused", refused, 90)
    assert "force" in stalled["message"] and seen[:12] in pair.status()["refusal"], pair.status()
    assert pair.status()["lastAppliedRevision"] == seen and pair.status()["forcePushBaseline"] == seen
    rollout = pair.world.rollout()
    assert rollout is not None and rollout["spec"]["targetVersion"] == "1.0.0"
    assert not pair.events("UpgradeStarted")
    assert b.get("/healthz")[0] == 200


def test_restart_right_after_a_rollout_starts_resumes_the_newer_commit(pair: Pair) -> None:
    """Invariant: a controller restarted mid-rollout plans from the cluster's lastAppliedRevision (the commit
    being rolled out), never from its cache's older one: no DowngradeStarted, the KDRollout never targets the
    older version again, and the rollout finishes."""
    solo = pair.replica("solo")
    pair.leads(solo)
    pair.world.wait_ready_at("1.0.0", timeout=120)
    pair.ready_at(pair.head())
    targets = RolloutTargets(pair.world)
    try:
        second = pair.world.commit({"apps/hello.yaml": hello_app("2.0.0")}, "hello 2.0.0")
        solo.poll_now()
        wait_for("the rollout started", lambda: pair.events("UpgradeStarted"), 90)
        assert solo.stop() == 0
        solo = pair.replica("solo", env=slow_git(pair.tmp, 3))
        pair.world.wait_ready_at("2.0.0", timeout=180)
        pair.ready_at(second)
    finally:
        targets.stop()
    assert not pair.events("DowngradeStarted")
    assert "1.0.0" not in targets.seen[targets.seen.index("2.0.0") :], targets.seen
