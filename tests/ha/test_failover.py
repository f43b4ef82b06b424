"""HA: two `gitops-kd run` replicas on one cluster and one repo; the leader is SIGKILLed mid-upgrade, the
standby takes over within the lease duration and finishes, and no step ever runs twice."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from gitops_kd.constants import LEASE_DURATION, LEASE_RETRY_PERIOD
from gitops_kd.kube.leader import JITTER_FACTOR
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess, token_kubeconfig
from tests.e2e.harness import E2E, NS, hello_app
from tests.ha.podwatch import DownTimeline

SYSTEM_NS = "gitops-kd-system"
RETRY_PERIOD = LEASE_RETRY_PERIOD  # the defaults, what `gitops-kd run` uses here
HOOK = {"command": ["/bin/sh", "-c", 'echo "upgraded-to-2.0.0 $(hostname)" >> /var/lib/hello/upgrade.log'],
        "timeoutSeconds": 60}


def app_with_appending_hook() -> str:
    import yaml

    doc = yaml.safe_load(hello_app("2.0.0"))
    doc["spec"]["upgrade"]["hooks"]["postUpgrade"] = HOOK
    return yaml.safe_dump(doc, sort_keys=False)


def lease_holder(world: E2E) -> str:
    """holderIdentity of the controller's Lease (wherever --leader-elect put it), "" when none."""
    items = world.rest.list("coordination.k8s.io/v1", "leases", None)["items"]
    holders = [(i["spec"] or {}).get("holderIdentity") or "" for i in items if i["metadata"]["name"] == "gitops-kd"]
    assert len(holders) <= 1, holders
    return holders[0] if holders else ""


def lease_time(world: E2E, field: str) -> datetime:
    """A MicroTime field of the controller's Lease (renewTime, acquireTime)."""
    items = world.rest.list("coordination.k8s.io/v1", "leases", None)["items"]
    spec = next(i["spec"] for i in items if i["metadata"]["name"] == "gitops-kd")
    return datetime.fromisoformat(spec[field].replace("Z", "+00:00"))


def leader_of(world: E2E, procs: list[RunProcess]) -> RunProcess | None:
    holder = lease_holder(world)
    found = [p for p in procs if holder.startswith(p.name + "_")]
    return found[0] if found else None


def events(world: E2E, reason: str) -> list[dict[str, Any]]:
    return [e for e in world.rest.list("v1", "events", NS)["items"]
            if e["involvedObject"].get("name") == "hello-dev" and e.get("reason") == reason]


def start_replicas(world: E2E, tmp_path: Path, procs: list[RunProcess], *extra: str) -> None:
    """Two `gitops-kd run --leader-elect` replicas (appended to ``procs``) on ``world``, as its ServiceAccount."""
    world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": SYSTEM_NS}})
    kubeconfig = token_kubeconfig(world.cluster, tmp_path / "sa.kubeconfig", "gitops-kd-sa")
    for name in ("replica-a", "replica-b"):
        procs.append(RunProcess(name, tmp_path, kubeconfig, str(world.repo), "--namespace", NS,
                                "--leader-elect", *extra, env={"POD_NAMESPACE": SYSTEM_NS}))


def test_leader_killed_mid_upgrade_standby_finishes_without_repeating_a_step(tmp_path: Path) -> None:
    world = E2E(tmp_path)
    procs: list[RunProcess] = []
    watch: DownTimeline | None = None
    try:
        start_replicas(world, tmp_path, procs)
        leader = wait_for("a leader", lambda: leader_of(world, procs), 60)
        standby = next(p for p in procs if p is not leader)
        world.wait_ready_at("1.0.0", timeout=120)
        assert standby.get("/healthz")[0] == 200, "the standby is alive (liveness) while not leading"

        watch = DownTimeline(world.rest, "hello-dev", expected=3)
        world.commit({"apps/hello.yaml": app_with_appending_hook()}, "hello 2.0.0, appending hook")
        leader.poll_now()
        # Mid-upgrade: the first member is replaced, hooked and gated; the second one is being replaced.
        wait_for("second member deleted", lambda: len(watch.deleted) >= 2, 120)
        assert len(events(world, "HookSucceeded")) == 1
        leader.kill()
        last_renew = lease_time(world, "renewTime")  # the dead leader's last renewal: its lease runs from here
        wait_for("standby takes the Lease", lambda: leader_of(world, procs) is standby,
                 LEASE_DURATION + 3 * RETRY_PERIOD + 5, interval=0.1)
        # The standby may take the Lease once it has seen it unrenewed for a lease duration: never sooner
        # (two leaders), and at the latest one jittered retry period to notice the last renewal plus one to
        # notice the expiry later (client-go's rule). Timestamps are the electors' own (renewTime /
        # acquireTime), so load on the test process does not skew the measure.
        took_over = (lease_time(world, "acquireTime") - last_renew).total_seconds()
        latest = LEASE_DURATION + 2 * RETRY_PERIOD * (1 + JITTER_FACTOR) + 0.5
        assert LEASE_DURATION - 0.5 <= took_over <= latest, \
            f"standby acquired the Lease {took_over:.1f}s after the last renewal (bound {latest:.1f}s)"

        world.wait_ready_at("2.0.0", timeout=180)
        pods = sorted(p["metadata"]["name"] for p in world.pods())
        assert len(pods) == 3
        # each member ran the hook exactly once: one line in its log, one HookSucceeded Event naming it
        for pod in pods:
            lines = world.sh(pod, "cat /var/lib/hello/upgrade.log").splitlines()
            assert lines == [f"upgraded-to-2.0.0 {pod}"], (pod, lines)
        hooked = [e["message"] for e in events(world, "HookSucceeded")]
        assert len(hooked) == 3, hooked
        for pod in pods:
            assert sum(pod in m for m in hooked) == 1, (pod, hooked)
        # every member replaced once, never two down at once
        assert sorted(watch.deleted) == pods, watch.deleted
        assert watch.max_down <= 1, watch.timeline
        ro = world.rollout()
        assert ro is not None and ro["status"]["phase"] == "Idle"
        assert standby.alive and standby.get("/readyz")[0] == 200
    finally:
        if watch is not None:
            watch.stop()
        for p in procs:
            p.stop()
        world.close()
