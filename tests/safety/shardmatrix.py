"""The fault matrix's held kinds (kill, freeze) with 3 replicas of `gitops-kd run --shards 6` (issue 31).

Three real `gitops-kd run --shards SHARDS` processes share one embedded cluster, each with its own bearer token
(tests/ha/test_failover.token_of), so the API server's access log and fault rules tell them apart. Once they hold two
shards each, one KDCluster per replica is committed (a name whose shard that replica holds). The *victim* is the
replica holding shard 0 (it also writes the instance record): the fault is its k-th write or exec (Lease writes not
counted), which hangs at the server. kill: the victim is SIGKILLed while it hangs and a fresh replica (a new token)
starts in its place. freeze: the victim is SIGSTOPped while it hangs until the other replicas hold every shard it
held, then SIGCONTed (its hung request ends in a 504, not applied). The sequence is matrix.py's: upgrade, `git
revert`, revert of the revert, and its invariants are checked for every cluster (see run_sharded).

Replicas coming and going (issue 41), at the victim's k-th write or exec (it fails with a 504 after MARK seconds, a
fault of its own): join: only two replicas run, the third joins (the two drain a shard each for it); resume: the
victim is SIGSTOPped at once (its execs in flight run on in the pods) until the others hold its shards, then
SIGCONTed (it takes shards back once they drained them); count: a rolling update (maxSurge 1) replaces the three
replicas by three of `--shards COUNT_NEW`; mode: the same to `--shards 1` (the leader-elected mode).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.plan.focus import cluster_key
from gitops_kd.plan.shard import shard_of
from gitops_kd.status.source import PLURAL
from gitops_kd.testing import pod_ready, wait_for
from kdsim.apiserver.faults import WRITE
from tests.deploy.runner import RunProcess, token_kubeconfig
from tests.e2e.harness import E2E, git
from tests.ha.test_failover import SYSTEM_NS, token_of
from tests.safety.matrix import HOOK_LOG, MIGRATE_LOG, POD_GRACE_CAP, Fault, _read_files, matrix_app
from tests.scenarios.runs import clean_system_namespace

SHARDS = 6
KINDS = ("kill", "freeze", "join", "resume", "count", "mode")
HELD = ("kill", "freeze")  # the victim's k-th request hangs while it is killed or frozen
COUNT_NEW = 9  # the count kind's new shard count
MARK = 1.0  # seconds the k-th request of the kinds that are not held waits before its 504
REPLICAS = ("replica-a", "replica-b", "replica-c")
LEASE = (4.0, 3.0, 0.5)  # lease duration, renew deadline, retry period of the replicas (`--lease-*`)
HANG = 30.0  # seconds the victim's k-th request hangs at the server when it is killed
FREEZE_HANG = 3 * LEASE[0]  # seconds it hangs when frozen: the others hold its shards before it ends
TAKEOVER = 3 * LEASE[0] + 5  # the most seconds the others may take to hold a dead or frozen victim's shards
PHASE_TIMEOUT = 180.0
LEASES_API = "coordination.k8s.io/v1"
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


@dataclass
class ShardRun:
    """What one sharded run saw."""

    fault: Fault
    victim: str = ""  # the replica whose k-th write hung
    clusters: dict[str, str] = field(default_factory=dict)  # cluster -> the replica holding its shard at the start
    attempts: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)  # cluster -> attempt -> (dir, to)
    acted: bool = False  # the victim was killed or frozen
    fired: bool = False
    takeover: float = 0.0  # seconds from kill or freeze until the others held every shard the victim held
    ready_checks: int = 0
    late_writes: list[str] = field(default_factory=list)  # freeze: the victim's writes after it was deposed
    writes: int = 0  # the victim's writes and execs from the upgrade commit on (k ranges over 1..writes)


def holders(world: E2E) -> dict[int, str]:
    """shard -> the replica name holding its Lease ("" when none)."""
    items = world.rest.list(LEASES_API, "leases", SYSTEM_NS, label_selector="gitops-kd.io/shard")["items"]
    return {
        int(i["metadata"]["labels"]["gitops-kd.io/shard"]): ((i["spec"] or {}).get("holderIdentity") or "").split("_")[0]
        for i in items
    }


def _is_write(entry: Any) -> bool:
    return entry.resource != "leases" and (entry.verb in WRITE_VERBS or entry.subresource == "exec")


def _describe(entry: Any) -> str:
    return f"{entry.verb} {entry.resource}{'/' + entry.subresource if entry.subresource else ''} {entry.name}"


def cluster_for(world: E2E, replica: str, now: dict[int, str], taken: set[str]) -> str:
    """A KDCluster name (hello-s<i>) whose shard ``replica`` holds."""
    i = 0
    while True:
        name = f"hello-s{i}"
        if name not in taken and now.get(shard_of(cluster_key((world.ns, name)), SHARDS)) == replica:
            return name
        i += 1


def cluster_yaml(world: E2E, name: str) -> str:
    """hello-dev renamed, with one worker (two pods: fewer pods, the same roles and steps)."""
    text = world.template("clusters/hello-dev.yaml").replace("name: hello-dev", f"name: {name}", 1)
    return text.replace("members: 2", "members: 1")


def _images(world: E2E, cluster: str) -> set[str]:
    return {c["image"] for p in world.pods(cluster) for c in p["spec"]["containers"] if c["name"] == "app"}


def _ready_at(rollout: dict[str, Any] | None) -> str | None:
    status = (rollout or {}).get("status") or {}
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or ())
    return str(status.get("appVersion")) if ready else None


class Sharded:
    """The replicas of one run and the acts on the victim."""

    def __init__(self, world: E2E, tmp: Path, run: ShardRun) -> None:
        self.world, self.tmp, self.run = world, tmp, run
        self.procs: dict[str, RunProcess] = {}
        self.deposed_at = 0  # freeze: the victim's access-log length when the others held its shards

    def start(self, name: str, shards: int = SHARDS) -> RunProcess:
        kubeconfig = token_kubeconfig(self.world.cluster, self.tmp / f"{name}.kubeconfig", token_of(name))
        self.procs[name] = RunProcess(
            name,
            self.tmp,
            kubeconfig,
            str(self.world.repo),
            "--namespace",
            self.world.ns,
            "--shards",
            str(shards),
            "--lease-duration",
            str(LEASE[0]),
            "--lease-renew-deadline",
            str(LEASE[1]),
            "--lease-retry-period",
            str(LEASE[2]),
            "--log-level",
            "info",
            env={"POD_NAMESPACE": SYSTEM_NS},
            preloaded=True,
        )
        return self.procs[name]

    def poll_now(self) -> None:
        for proc in self.procs.values():
            if proc.alive:
                proc.poll_now()

    def act(self) -> None:
        """The victim's k-th request hangs at the server: kill it (a fresh replica starts) or freeze it."""
        run, victim = self.run, self.run.victim
        run.acted = True
        had = {s for s, h in holders(self.world).items() if h == victim}
        started = time.monotonic()

        def taken() -> bool:
            now = holders(self.world)
            return all(now.get(s) not in ("", victim) for s in had)

        if run.fault.kind == "join":
            joiner = self.start(REPLICAS[-1])
            wait_for(f"{run.fault}: {joiner.name} holds a shard", lambda: joiner.name in holders(self.world).values(), 120, 0.1)
            run.takeover = time.monotonic() - started
            return
        if run.fault.kind in ("count", "mode"):
            self.roll(COUNT_NEW if run.fault.kind == "count" else 1)
            run.takeover = time.monotonic() - started
            return
        if run.fault.kind == "kill":
            self.procs[victim].kill()
            self.start(f"{victim}-new")
            wait_for(f"{run.fault}: the others hold {victim}'s shards {sorted(had)}", taken, TAKEOVER, 0.1)
            run.takeover = time.monotonic() - started
            return
        proc = self.procs[victim]
        os.kill(proc.proc.pid, signal.SIGSTOP)
        try:
            wait_for(f"{run.fault}: the others hold {victim}'s shards {sorted(had)}", taken, TAKEOVER, 0.1)
            run.takeover = time.monotonic() - started
            self.deposed_at = len(self.world.cluster.access_log.entries(token_of(victim)))
        finally:
            os.kill(proc.proc.pid, signal.SIGCONT)

    def roll(self, shards: int) -> None:
        """A Deployment's rolling update (maxSurge 1) to ``--shards shards``: a new replica starts and is ready,
        then an old one stops (SIGTERM: its action in flight finishes, its Leases are released)."""
        for name in [n for n, p in self.procs.items() if p.alive]:
            new = self.start(f"{name}-{shards}", shards)
            new.url(timeout=180)
            wait_for(f"{new.name} ready", lambda p=new: p.get("/readyz")[0] == 200, 90, 0.2)  # type: ignore[misc]
            self.procs[name].stop()

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.stop()


def _wait_all_ready(sh: Sharded, version: str, armed: bool) -> None:
    """Until every cluster is Ready at ``version``, acting on the victim once its hang fired; checks each Ready
    claim against the pods (invariant: Ready at a version only while every pod runs that version's image)."""
    world, run = sh.world, sh.run
    faults = world.cluster.faults
    done: set[str] = set()
    deadline = time.monotonic() + PHASE_TIMEOUT
    while time.monotonic() < deadline:
        if armed and run.fault.k and not run.acted and not faults.rules():
            sh.act()
        for cluster in run.clusters:
            rollout = world.rollout(cluster)
            status = (rollout or {}).get("status") or {}
            if status.get("attempt"):
                run.attempts[cluster][status["attempt"]] = (status.get("direction"), status.get("targetVersion"))
            if status.get("phase") == "Stalled":
                raise AssertionError(f"{run.fault}: {cluster} Stalled ({status.get('stalledReason')}): {status.get('message')}")
            at = _ready_at(rollout)
            if at is None:
                continue
            images = _images(world, cluster)
            again = world.rollout(cluster)
            if (again or {}).get("metadata", {}).get("resourceVersion") != rollout["metadata"]["resourceVersion"]:
                continue  # it changed while its pods were listed
            run.ready_checks += 1
            assert images <= {f"gitops-kd/hello:{at}"}, f"{run.fault}: {cluster} Ready at {at}, pods run {images}"
            if at == version and images == {f"gitops-kd/hello:{version}"}:
                done.add(cluster)
        if done == set(run.clusters):
            return
        time.sleep(0.1)
    raise AssertionError(f"{run.fault}: not all Ready at {version} after {PHASE_TIMEOUT}s (done: {sorted(done)})")


def run_sharded(tmp: Path, fault: Fault) -> ShardRun:
    """The sequence with ``fault`` (kind kill or freeze; k=0: none) on 3 sharded replicas. Invariants, for every
    cluster: exactly the attempts Git asked for (upgrade, downgrade, upgrade); Ready at a version only while every
    pod runs its image; each pod's hook and migration ran once per upgrade (twice in all) and its user data and
    schema are where the data rules put them; no pod was created anew. The others hold a killed or frozen victim's
    shards within about one lease duration; a frozen victim writes nothing after its shards were taken until it
    holds a shard Lease again (per-shard fencing)."""
    world = E2E(tmp, persist=False, pod_grace_cap=POD_GRACE_CAP)
    run = ShardRun(fault)
    sh = Sharded(world, tmp, run)
    try:
        clean_system_namespace(world)
        world.commit({"clusters/hello-dev.yaml": None}, "no cluster yet: the clusters follow the shards")
        # One replica first, the others once it holds every shard and its record the head, as a Deployment rolls
        # out (all at once once left a follower on an older commit: docs/design/sharding.md).
        sh.start(REPLICAS[0])
        wait_for(
            f"{REPLICAS[0]} holds every shard",
            lambda: set(holders(world).values()) == {REPLICAS[0]} and len(holders(world)) == SHARDS,
            60,
            0.1,
        )
        head = git(world.repo, "rev-parse", "HEAD")
        wait_for(
            "the record holds the head",
            lambda: (
                ((world.rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, SYSTEM_NS, "gitops-kd") or {}).get("status") or {}).get(
                    "lastAppliedRevision"
                )
                == head
            ),
            60,
            0.1,
        )
        starting = REPLICAS[:2] if fault.kind == "join" else REPLICAS  # join: the third joins at the fault
        for name in starting[1:]:
            sh.start(name)

        def balanced() -> dict[int, str] | None:
            now = holders(world)
            counts = [list(now.values()).count(r) for r in starting]
            return now if len(now) == SHARDS and counts == [SHARDS // len(starting)] * len(starting) else None

        now = wait_for("each replica holds its share", balanced, 60, 0.1)
        for replica in REPLICAS if fault.kind != "join" else (*starting, starting[0]):
            run.clusters[cluster_for(world, replica, now, set(run.clusters))] = replica
        run.attempts = {c: {} for c in run.clusters}
        world.commit({f"clusters/{c}.yaml": cluster_yaml(world, c) for c in run.clusters}, "one cluster per replica")
        sh.poll_now()
        for cluster in run.clusters:
            world.wait_ready_at("1.0.0", name=cluster, timeout=PHASE_TIMEOUT)
            wait_for(
                f"{cluster}: two pods Ready",
                lambda c=cluster: (
                    len(world.pods(c)) == 2  # type: ignore[misc]
                    and all(pod_ready(p) for p in world.pods(c))
                ),
                60,
            )
        members = {c: sorted(p["metadata"]["name"] for p in world.pods(c)) for c in run.clusters}
        for pods in members.values():
            for pod in pods:
                world.sh(pod, "echo user-data > /var/lib/hello/user.txt")
        run.victim = holders(world)[0]
        before = len([e for e in world.cluster.access_log.entries(token_of(run.victim)) if _is_write(e)])
        if fault.k:
            world.cluster.faults.add(
                "timeout",
                WRITE,
                "!leases",
                user=token_of(run.victim),
                skip=fault.k - 1,
                delay={"kill": HANG, "freeze": FREEZE_HANG}.get(fault.kind, MARK),
            )
        upgrade = world.commit({"apps/hello.yaml": matrix_app()}, "hello 2.0.0")
        sh.poll_now()
        _wait_all_ready(sh, "2.0.0", True)
        git(world.repo, "revert", "--no-edit", upgrade)
        sh.poll_now()
        _wait_all_ready(sh, "1.0.0", True)
        git(world.repo, "revert", "--no-edit", git(world.repo, "rev-parse", "HEAD"))
        sh.poll_now()
        _wait_all_ready(sh, "2.0.0", True)
        run.fired = bool(fault.k) and not world.cluster.faults.rules()
        run.writes = len([e for e in world.cluster.access_log.entries(token_of(run.victim)) if _is_write(e)]) - before
        world.cluster.faults.clear()
        for cluster, attempts in run.attempts.items():
            # Invariant: exactly the attempts Git asked for, in order, on every shard.
            assert list(attempts.values()) == [("upgrade", "2.0.0"), ("downgrade", "1.0.0"), ("upgrade", "2.0.0")], (
                f"{fault}: {cluster} attempts {attempts}"
            )
            assert sorted(p["metadata"]["name"] for p in world.pods(cluster)) == members[cluster]
            for pod in members[cluster]:
                hook, migrate, user, schema = _read_files(
                    world, pod, HOOK_LOG, MIGRATE_LOG, "/var/lib/hello/user.txt", "/var/lib/hello/schema-version"
                )
                # Invariant: each migration and hook ran exactly once per pod per upgrade attempt.
                assert hook == "hook\nhook\n", f"{fault}: {cluster}/{pod} hook runs {hook!r}"
                assert migrate == "migrate\nmigrate\n", f"{fault}: {cluster}/{pod} migration runs {migrate!r}"
                assert user == "user-data\n" and schema == "2\n", f"{fault}: {cluster}/{pod} data {user!r} {schema!r}"
        if fault.kind in ("freeze", "resume") and run.acted:
            _check_fenced(sh)
        return run
    finally:
        sh.stop()
        world.close()


def _check_fenced(sh: Sharded) -> None:
    """Invariant (freeze): after the others held its shards, the resumed victim wrote nothing (no write, no exec)
    until it held a shard Lease again (taken anew, after its fair share said so)."""
    after = sh.world.cluster.access_log.entries(token_of(sh.run.victim))[sh.deposed_at :]
    for entry in after:
        if entry.resource == "leases" and entry.verb in ("create", "update") and "-shard-" in entry.name:
            break  # it holds (or tries for) a shard again: its writes from here on are a holder's
        if _is_write(entry):
            sh.run.late_writes.append(_describe(entry))
    assert not sh.run.late_writes, f"{sh.run.fault}: the deposed {sh.run.victim} wrote {sh.run.late_writes}"
