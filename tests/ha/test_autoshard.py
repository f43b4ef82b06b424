"""Sharding (issue 31): replicas of one `gitops-kd run --shards N` split the KDClusters by shard Leases. A replica
that joins takes its share without pausing the shards the others keep; a replica SIGKILLed mid-upgrade costs its
shards about one lease duration and nothing else; no step runs twice. Real processes, one embedded cluster."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from gitops_kd.kube.leader import replica_of
from gitops_kd.kube.shardleases import holders as shard_holders
from gitops_kd.plan.focus import cluster_key
from gitops_kd.plan.shard import shard_of
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess, token_kubeconfig
from tests.e2e.harness import E2E, NS, hello_app
from tests.ha.podwatch import DownTimeline
from tests.ha.test_failover import SYSTEM_NS, token_of

SHARDS = 4
LEASE = ("--lease-duration", "4", "--lease-renew-deadline", "3", "--lease-retry-period", "0.5")
DURATION = 4.0


def clusters_per_shard() -> dict[int, str]:
    """One KDCluster name per shard (hello-dev is one of them)."""
    names: dict[int, str] = {shard_of(cluster_key((NS, "hello-dev")), SHARDS): "hello-dev"}
    i = 0
    while len(names) < SHARDS:
        name = f"hello-s{i}"
        names.setdefault(shard_of(cluster_key((NS, name)), SHARDS), name)
        i += 1
    return names


def holders(world: E2E) -> dict[int, str]:
    """shard -> the replica name holding its Lease ("" when none)."""
    return {shard: replica_of(identity) for shard, identity in shard_holders(world.rest, SYSTEM_NS).items()}


def replica(world: E2E, tmp: Path, name: str, shards: int = SHARDS, extra: tuple[str, ...] = ()) -> RunProcess:
    """`gitops-kd run --shards` as ``name`` (its own token), with ``extra`` arguments."""
    kubeconfig = token_kubeconfig(world.cluster, tmp / f"{name}.kubeconfig", token_of(name))
    return RunProcess(
        name,
        tmp,
        kubeconfig,
        str(world.repo),
        "--namespace",
        NS,
        "--shards",
        str(shards),
        *LEASE,
        *extra,
        env={"POD_NAMESPACE": SYSTEM_NS},
    )


def held_counts(world: E2E) -> dict[str, set[str]]:
    """shard count (label gitops-kd.io/shards) -> the replicas holding a shard Lease written with it."""
    out: dict[str, set[str]] = {}
    for item in world.rest.list("coordination.k8s.io/v1", "leases", SYSTEM_NS, label_selector="gitops-kd.io/shard")["items"]:
        holder = ((item["spec"] or {}).get("holderIdentity") or "").split("_")[0]
        if holder:
            out.setdefault(item["metadata"]["labels"].get("gitops-kd.io/shards", "?"), set()).add(holder)
    return out


def replaced(world: E2E, cluster: str) -> list[str]:
    """The pods of ``cluster`` gitops-kd replaced (PodReplaced Events, one per replacement, counted)."""
    out = []
    for e in world.rest.list("v1", "events", NS)["items"]:
        if e["involvedObject"].get("name") == cluster and e.get("reason") == "PodReplaced":
            out += [e["message"].split()[2]] * int(e.get("count") or 1)
    return out


def test_replicas_split_the_shards_join_without_pause_and_take_over_a_killed_ones(tmp_path: Path) -> None:
    """Invariants: each shard has one holder; a joining replica takes only free shards or ones released to it (the
    shards the first replica keeps never change holder); after a SIGKILL the survivor holds every shard within about
    one lease duration; every pod is replaced once per upgrade (no step twice across the takeover)."""
    world = E2E(tmp_path / "world")
    world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}})
    names = clusters_per_shard()
    base = world.template("clusters/hello-dev.yaml")
    world.commit(
        {f"clusters/{n}.yaml": base.replace("name: hello-dev", f"name: {n}", 1) for n in names.values() if n != "hello-dev"},
        "one cluster per shard",
    )
    procs: list[RunProcess] = []
    try:
        procs.append(replica(world, tmp_path, "replica-a"))
        for name in names.values():
            world.wait_ready_at("1.0.0", name=name, timeout=180)
        assert wait_for(
            "replica-a holds every shard",
            lambda: set(holders(world).values()) == {"replica-a"} and len(holders(world)) == SHARDS,
            30,
        )

        procs.append(replica(world, tmp_path, "replica-b"))
        seen: dict[int, set[str]] = {s: set() for s in range(SHARDS)}

        def balanced() -> bool:
            now = holders(world)
            for shard, holder in now.items():
                seen[shard].add(holder)
            counts = [list(now.values()).count(r) for r in ("replica-a", "replica-b")]
            return counts == [SHARDS // 2, SHARDS // 2]

        wait_for("two shards each", balanced, 60, 0.1)
        final = holders(world)
        kept = [s for s, h in final.items() if h == "replica-a"]
        assert all(seen[s] == {"replica-a"} for s in kept), seen  # no pause, no other holder for kept shards

        def metric(proc: RunProcess, name: str) -> dict[str, float]:
            status, text = proc.get("/metrics")
            assert status == 200, text
            return {
                line.split('shard="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith(name + "{")
            }

        held = [metric(p, "gitops_kd_shard_held") for p in procs]
        assert [sum(h.values()) for h in held] == [SHARDS // 2, SHARDS // 2]  # metrics per shard, per replica
        assert all(held[0][str(s)] + held[1][str(s)] == 1 for s in range(SHARDS))
        assert wait_for(
            "gitops_kd_shard_clusters sums to the fleet",
            lambda: sum(sum(metric(p, "gitops_kd_shard_clusters").values()) for p in procs) == len(names),
            10,
            0.2,
        )
        shown = subprocess.run(
            [
                "kubectl",
                "--kubeconfig",
                str(world.cluster.kubeconfig),
                "-n",
                SYSTEM_NS,
                "get",
                "leases",
                "-l",
                "gitops-kd.io/shard",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shown.returncode == 0 and "HOLDER" in shown.stdout, shown.stdout + shown.stderr
        assert "replica-a" in shown.stdout and "replica-b" in shown.stdout, shown.stdout

        watches = {name: DownTimeline(world.rest, name, 3) for name in names.values()}  # deletions, from the watch
        world.commit({"apps/hello.yaml": hello_app("2.0.0")}, "hello 2.0.0")
        b_cluster = next(names[s] for s, h in final.items() if h == "replica-b")
        wait_for(f"{b_cluster} upgrading under replica-b", lambda: replaced(world, b_cluster), 120, 0.1)
        procs[1].kill()
        killed = time.monotonic()
        wait_for("replica-a holds every shard again", lambda: set(holders(world).values()) == {"replica-a"}, 60, 0.1)
        took = time.monotonic() - killed
        assert took < DURATION + 4, f"takeover took {took:.1f}s (lease duration {DURATION}s)"
        for name in names.values():
            world.wait_ready_at("2.0.0", name=name, timeout=240)
            watches[name].stop()
            pods = watches[name].deleted  # the API server's deletions (a killed replica's Event may be lost)
            assert len(pods) == len(set(pods)) == 3, (name, pods)  # each pod replaced once, none twice
    finally:
        for proc in procs:
            proc.stop()
        world.close()


def test_replicas_with_different_shard_counts_never_hold_shards_at_once(tmp_path: Path) -> None:
    """Invariant: a key's shard depends on the shard count, so replicas started with different --shards (a rolling
    update that changes it) never hold shards at the same time: the replica with the lower count stands by (its
    member Lease is labelled gitops-kd.io/standby) and the one with the higher count takes shards only once the
    lower one released them; when the lower one leaves, the higher keeps every shard."""
    world = E2E(tmp_path / "world")
    world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}})
    procs: list[RunProcess] = []
    try:
        procs.append(replica(world, tmp_path, "replica-a", shards=2))
        world.wait_ready_at("1.0.0", timeout=180)
        assert wait_for("replica-a holds 2 shards", lambda: held_counts(world) == {"2": {"replica-a"}}, 30)
        procs.append(replica(world, tmp_path, "replica-b", shards=4))
        snapshots: list[dict[str, set[str]]] = []

        def moved() -> bool:
            snapshots.append(held_counts(world))
            return snapshots[-1] == {"4": {"replica-b"}} and len(holders(world)) == 4 and all(holders(world).values())

        wait_for("replica-b holds all 4 shards", moved, 60, 0.05)
        assert all(len(s) <= 1 for s in snapshots), [s for s in snapshots if len(s) > 1]
        members = world.rest.list("coordination.k8s.io/v1", "leases", SYSTEM_NS, label_selector="gitops-kd.io/member")["items"]
        standby = {
            m["spec"]["holderIdentity"].split("_")[0]
            for m in members
            if (m["metadata"].get("labels") or {}).get("gitops-kd.io/standby") == "true"
        }
        assert standby == {"replica-a"}, members
        procs[0].stop()
        head = world.commit({"apps/hello.yaml": hello_app("2.0.0")}, "hello 2.0.0")
        world.wait_ready_at("2.0.0", timeout=180)  # the higher count acts alone: the upgrade runs
        assert held_counts(world) == {"4": {"replica-b"}}
        # replica-b took shard 0 after following: it re-checked the instance record, then wrote what it applied
        assert wait_for(
            "the record holds the upgrade's commit",
            lambda: (
                (world.rest.get("gitops-kd.io/v1alpha1", "gitopskdsources", SYSTEM_NS, "gitops-kd").get("status") or {}).get(
                    "lastAppliedRevision"
                )
                == head
            ),
            30,
            0.1,
        )
    finally:
        for proc in procs:
            proc.stop()
        world.close()
