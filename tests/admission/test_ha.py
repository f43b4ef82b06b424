"""The admission webhook with two `gitops-kd run --leader-elect` replicas behind its Service, end to end.

Invariant: an answer does not depend on which replica the API server reaches. Every replica, leader or standby,
judges from the revision the GitOpsKDSource records as applied (its own Git cache) and the watch caches: an
out-of-band edit sent until both replicas answered is refused by each, with the same message; with the leader
SIGKILLed the standby refuses it before it even holds the Lease, and after it took over; after a new commit is
applied an edit to the new Git value (a stale replica would refuse it) is allowed by both, and one to the old
value is refused by both. KubeDirector writes as its ServiceAccount: its writes pass on a replica still loading.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml

from gitops_kd.testing import wait_for
from tests.admission.test_webhook import (
    GLASS_GROUP,
    KD_USER,
    SPECS,
    WORKLOADS,
    _metrics,
    _render,
    admission_port,
    endpoints,
    install,
    overlay,
)
from tests.deploy.runner import RunProcess
from tests.deploy.test_rbac import SYSTEM_NS
from tests.e2e.harness import E2E, NS
from tests.ha.test_failover import leader_of, lease_holder

KD_API = "kubedirector.hpe.com/v1beta1"
SOURCE = "gitops-kd.io/v1alpha1", "gitopskdsources"


def _count(proc: RunProcess, kind: str, result: str) -> float:
    """gitops_kd_admission_requests_total{kind, result} of one replica (0 before its first such answer)."""
    m = re.search(rf'gitops_kd_admission_requests_total{{kind="{kind}",result="{result}"}} ([0-9.e+]+)', _metrics(proc))
    return float(m.group(1)) if m else 0.0


def _applied(world: E2E) -> str:
    return str((world.rest.get(*SOURCE, SYSTEM_NS, "gitops-kd").get("status") or {}).get("lastAppliedRevision", ""))


def _judging(proc: RunProcess, sha: str) -> bool:
    return f"admission: judging from revision {sha[:12]}" in proc.log()


def _answered_by(procs: list[RunProcess], kind: str, result: str, edit: Callable[[], None]) -> RunProcess:
    """Run `edit()` and return the one replica whose {kind, result} answer count moved, by exactly one."""
    before = [_count(p, kind, result) for p in procs]
    edit()

    def counted() -> list[float] | None:
        counts = [_count(p, kind, result) for p in procs]
        return counts if sum(counts) > sum(before) else None

    after = wait_for(f"one {result} answer counted", counted, 10)
    moved = [(p, a - b) for p, b, a in zip(procs, before, after, strict=True) if a != b]
    assert [d for _, d in moved] == [1.0], (before, after)
    return moved[0][0]


def test_two_replicas_answer_alike_through_failover_and_a_new_commit(tmp_path: Path) -> None:
    path = overlay(tmp_path)
    docs = _render(path)
    [vwc] = [d for d in docs if d["kind"] == "ValidatingWebhookConfiguration"]
    [service] = [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "gitops-kd-admission"]
    world = E2E(tmp_path / "world", kubedirector_user=KD_USER)  # KubeDirector writes as its ServiceAccount
    procs: list[RunProcess] = []
    try:
        kubeconfig = install(world, tmp_path, service, vwc)

        def replica(name: str) -> RunProcess:
            # alert-only: a break-glass edit stays, so an edit back to Git's value can be judged (step 4)
            proc = RunProcess(
                name,
                tmp_path,
                kubeconfig,
                str(world.repo),
                "--namespace",
                NS,
                "--leader-elect",
                "--admission-listen",
                "127.0.0.1:0",
                "--break-glass-group",
                GLASS_GROUP,
                "--drift-policy",
                "alert-only",
                env={"POD_NAMESPACE": SYSTEM_NS},
            )
            procs.append(proc)
            return proc

        a, b = replica("replica-a"), replica("replica-b")
        ports = {a.name: admission_port(a), b.name: admission_port(b)}
        endpoints(world, *ports.values())
        leader = wait_for("a leader", lambda: leader_of(world, procs), 60)
        standby = b if leader is a else a
        world.wait_ready_at("1.0.0", timeout=120)
        first = wait_for("the applied revision recorded", lambda: _applied(world) or None, 30)
        wait_for("both replicas judging from it", lambda: all(_judging(p, first) for p in (a, b)), 60)
        # while the replicas started and loaded the revision, only gitops-kd and KubeDirector wrote what the
        # webhook guards: their users pass before anything is judged, so nothing was answered by the failure policy
        assert not [p.name for p in (a, b) if "not judged" in p.log()]
        assert {(e.verb, e.resource) for e in world.cluster.access_log.entries(KD_USER)} & {
            ("patch", "statefulsets"),
            ("patch", "kubedirectorclusters"),
        }
        [sts] = [
            s["metadata"]["name"]
            for s in world.rest.list("apps/v1", "statefulsets", NS)["items"]
            if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
        ]
        image = ["set", "image", f"statefulset/{sts}", "app=gitops-kd/hello:6.6.6"]
        messages: set[str] = set()

        def refused() -> None:
            done = world.kubectl(*image)
            assert done.returncode != 0, f"an out-of-band edit passed: {done.stdout}"
            messages.add(done.stderr.strip())

        # 1. the edit, sent until both replicas answered: each refuses it, with the one same message
        answered: set[str] = set()
        for _ in range(40):
            answered.add(_answered_by([a, b], "StatefulSet", "denied", refused).name)
            if answered == {a.name, b.name}:
                break
        assert answered == {a.name, b.name}, f"only {answered} answered 40 edits"
        [message] = messages
        assert (
            f'admission webhook "{WORKLOADS}" denied the request: StatefulSet {NS}/{sts} is managed by '
            "gitops-kd from Git: spec.template.spec.containers[app].image is owned by gitops-kd"
        ) in message
        assert not [p.name for p in (a, b) if "not judged" in p.log()]
        assert "gitops-kd/hello:1.0.0" in yaml.safe_dump(world.rest.get("apps/v1", "statefulsets", NS, sts))

        # 2. the leader SIGKILLed; the endpoints controller drops its pod: the standby refuses the edit before it
        # holds the Lease (the dead leader's is not expired yet), and after it took over
        held_by = lease_holder(world)
        leader.kill()
        endpoints(world, ports[standby.name])
        assert _answered_by([standby], "StatefulSet", "denied", refused) is standby
        assert lease_holder(world) == held_by, "the standby led already: the Lease expired before the edit"
        wait_for("the standby leading", lambda: leader_of(world, procs) is standby, 60)
        assert _answered_by([standby], "StatefulSet", "denied", refused) is standby
        [message_after] = messages
        assert message_after == message

        # 3. a replacement replica (the Deployment's new pod) and a new commit: a label Git now gives the cluster
        c = replica("replica-c")
        ports[c.name] = admission_port(c)
        endpoints(world, ports[standby.name], ports[c.name])
        wait_for("the new replica judging from the first commit", lambda: _judging(c, first), 60)
        cluster = yaml.safe_load((world.repo / "clusters/hello-dev.yaml").read_text())
        cluster["metadata"].setdefault("labels", {})["tier"] = "gold"
        second = world.commit({"clusters/hello-dev.yaml": yaml.safe_dump(cluster, sort_keys=False)}, "tier gold")
        standby.poll_now()
        wait_for("the new commit recorded as applied", lambda: _applied(world) == second, 60)
        wait_for(
            "the label applied",
            lambda: (
                world.rest.get(KD_API, "kubedirectorclusters", NS, "hello-dev")["metadata"].get("labels", {}).get("tier")
                == "gold"
            ),
            60,
        )
        wait_for("both replicas judging from the new commit", lambda: all(_judging(p, second) for p in (standby, c)), 60)

        # 4. a break-glass edit moves the label away (alert-only: it stays); putting Git's new value back is
        # allowed by both replicas (one judging the old commit would refuse it); the old value is refused by both
        def label(value: str, *glass: str) -> subprocess.CompletedProcess[str]:
            return world.kubectl(*glass, "label", "--overwrite", "kdcluster", "hello-dev", f"tier={value}")

        silver = ("--as", "alice", "--as-group", GLASS_GROUP)
        allowed: set[str] = set()
        refusals: set[str] = set()
        for _ in range(40):
            assert label("silver", *silver).returncode == 0

            def back_to_git() -> None:
                done = label("gold")
                assert done.returncode == 0, f"an edit to Git's new value was refused: {done.stderr}"

            allowed.add(_answered_by([standby, c], "KubeDirectorCluster", "allowed", back_to_git).name)
            assert label("silver", *silver).returncode == 0

            def back_to_old() -> None:
                done = label("bronze")
                assert done.returncode != 0, "an edit away from Git's new value passed"
                assert f'admission webhook "{SPECS}" denied the request' in done.stderr

            refusals.add(_answered_by([standby, c], "KubeDirectorCluster", "denied", back_to_old).name)
            if allowed == refusals == {standby.name, c.name}:
                break
        assert allowed == refusals == {standby.name, c.name}, (allowed, refusals)
        assert all(p.stop() == 0 for p in (standby, c))
    finally:
        for proc in procs:
            proc.stop()
        world.close()
