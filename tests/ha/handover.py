"""The handover tests' world (issue 41): clusters upgrading with a slow migration while replicas come and go.

Invariants every handover test checks (``Handover.finish``): no KDRollout ever Stalled and no UpgradeStalled or
StepInterrupted Event; every cluster Ready at 2.0.0 with every pod on its image; each pod's migration and hook ran
exactly once (their logs on the PVC); at most one replica (one layout) held a shard Lease of a cluster at a time is
the fence's job, the logs prove its effect: no step twice.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import yaml

from gitops_kd.kube.layouts import COUNT_LABEL, SHARD_LABEL
from gitops_kd.plan.focus import cluster_key
from gitops_kd.plan.shard import shard_of
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess, token_kubeconfig
from tests.e2e.harness import E2E, NS, hello_app
from tests.ha.test_failover import SYSTEM_NS, token_of
from tests.safety.matrix import HOOK_LOG, MIGRATE_LOG

LEASE = ("--lease-duration", "4", "--lease-renew-deadline", "3", "--lease-retry-period", "0.5")
GATE = "/var/lib/gitops-kd/go"  # on each member's PVC: a migration runs until the test creates it (release())
WINDOW = 15.0  # seconds the test watches, after a replica's exec into a held cluster, for a step run twice
WINDOW_MAX = 30.0  # seconds it watches for that exec, at most (under the 60 s a stopping controller waits for its action)
LEASES_API = "coordination.k8s.io/v1"


def slow_app() -> str:
    """hello 2.0.0 whose migration logs its start, then runs until the test releases it (GATE; at most 300 s), and
    whose hook logs each run."""
    doc = yaml.safe_load(hello_app("2.0.0"))
    upgrade = doc["spec"]["upgrade"]
    upgrade["hooks"]["postUpgrade"]["command"] = [
        "/bin/sh",
        "-c",
        f"echo upgraded-to-2.0.0 > /var/lib/hello/upgrade.log && echo hook >> {HOOK_LOG}",
    ]
    migrate = upgrade["from"][0]["persistDirs"]["/var/lib/hello"]["migrate"]
    migrate["command"] = [
        "/bin/sh",
        "-c",
        f"echo migrate >> {MIGRATE_LOG}; i=0; while [ ! -e {GATE} ] && [ $i -lt 300 ]; do sleep 1; i=$((i+1)); done; "
        "cp -a /var/lib/gitops-kd/old/var/lib/hello/. /var/lib/hello/ && echo 2 > /var/lib/hello/schema-version",
    ]
    migrate["timeoutSeconds"] = 600
    return yaml.safe_dump(doc, sort_keys=False)


def names_for(shards: int, count: int) -> list[str]:
    """``count`` KDCluster names (hello-s<i>) on distinct shards of ``shards`` (as far as there are shards)."""
    names: dict[int, str] = {}
    i = 0
    while len(names) < min(count, shards):
        names.setdefault(shard_of(cluster_key((NS, f"hello-s{i}")), shards), f"hello-s{i}")
        i += 1
    return sorted(names.values())


def shard_holders(world: E2E) -> dict[tuple[str, int], str]:
    """(layout, shard) -> the replica name holding that shard Lease ("" when free)."""
    out = {}
    for item in world.rest.list(LEASES_API, "leases", SYSTEM_NS, label_selector=SHARD_LABEL)["items"]:
        labels = item["metadata"]["labels"]
        holder = ((item.get("spec") or {}).get("holderIdentity") or "").split("_")[0]
        out[(labels.get(COUNT_LABEL, "?"), int(labels[SHARD_LABEL]))] = holder
    return out


class Handover:
    """One embedded cluster, clusters of hello with one worker each, the replicas started on it, and a watch that
    records every Stalled KDRollout."""

    def __init__(self, tmp: Path, clusters: list[str]) -> None:
        self.tmp, self.clusters = tmp, clusters
        self.world = E2E(tmp / "world")
        self.world.rest.create(
            "v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}}
        )
        base = self.world.template("clusters/hello-dev.yaml").replace("members: 2", "members: 1")
        self.world.commit(
            {
                "clusters/hello-dev.yaml": None,
                **{f"clusters/{n}.yaml": base.replace("name: hello-dev", f"name: {n}", 1) for n in clusters},
            },
            "the clusters",
        )
        self.procs: dict[str, RunProcess] = {}
        self.stalled: list[str] = []
        self._stop = threading.Event()
        self._releasing = threading.Event()
        self._watch = threading.Thread(target=self._watch_stalls, daemon=True)
        self._watch.start()

    def start(self, name: str, shards: int, *extra: str) -> RunProcess:
        kubeconfig = token_kubeconfig(self.world.cluster, self.tmp / f"{name}.kubeconfig", token_of(name))
        self.procs[name] = RunProcess(
            name,
            self.tmp,
            kubeconfig,
            str(self.world.repo),
            "--namespace",
            NS,
            "--shards",
            str(shards),
            "--log-level",
            "info",
            *LEASE,
            *extra,
            env={"POD_NAMESPACE": SYSTEM_NS},
            preloaded=True,  # forked from a server that imported everything: it joins within a second
        )
        return self.procs[name]

    def ready_at_1(self) -> None:
        for name in self.clusters:
            self.world.wait_ready_at("1.0.0", name=name, timeout=240)

    def upgrade(self) -> str:
        head = self.world.commit({"apps/hello.yaml": slow_app()}, "hello 2.0.0, slow migration")
        for proc in self.procs.values():
            if proc.alive:
                proc.poll_now()
        return head

    def migrating(self) -> set[str]:
        """The clusters with a migration started (its log line) in a pod still waiting for its schema."""
        out = set()
        for cluster in self.clusters:
            for pod in self.world.pods(cluster):
                script = f"cat {MIGRATE_LOG} 2>/dev/null; echo '|'; cat /var/lib/hello/schema-version 2>/dev/null; true"
                res = self.world.exec(pod["metadata"]["name"], ["/bin/sh", "-c", script])
                started, _, schema = res.stdout.partition("|\n")
                if res.exit_code == 0 and started.startswith("migrate") and schema.strip() != "2":
                    out.add(cluster)
        return out

    def wait_migrating(self, clusters: set[str] | None = None) -> None:
        """Until a migration runs in each of ``clusters`` (default: all) at once."""
        want = set(self.clusters if clusters is None else clusters)
        wait_for(f"migrations running in {sorted(want)}", lambda: want <= self.migrating(), 180, 0.2)

    def execs(self, replica: str) -> int:
        """How many execs ``replica`` sent so far (its steps and gates), from the API server's access log."""
        return sum(1 for e in self.world.cluster.access_log.entries(token_of(replica)) if e.subresource == "exec")

    def window(self, *watched: str) -> None:
        """With migrations held in flight, watch until one of ``watched`` sent an exec it had not sent before (it
        acts on a held cluster: the old code re-ran the migration, exit 97) and WINDOW seconds more, or at most
        WINDOW_MAX seconds when none does (the new code: it waits); fail at once if a rollout stalls. An
        observation window, not a wait for a condition."""
        before = {name: self.execs(name) for name in watched}
        deadline = time.monotonic() + WINDOW_MAX
        while time.monotonic() < deadline:
            assert not self.stalled, self.stalled
            if any(self.execs(name) > count for name, count in before.items()):
                deadline = min(deadline, time.monotonic() + WINDOW)
                before = {}
            time.sleep(0.2)

    def release(self) -> None:
        """Let every migration run to its end, the ones held now and the later ones: GATE is created in every pod
        now and, until the end, every second in the pods replaced since."""
        if self._releasing.is_set():
            return
        self._releasing.set()
        self._gate()
        threading.Thread(target=self._keep_released, daemon=True).start()

    def _gate(self) -> None:
        for cluster in self.clusters:
            for pod in self.world.pods(cluster):
                self.world.exec(pod["metadata"]["name"], ["/bin/sh", "-c", f"mkdir -p {GATE.rsplit('/', 1)[0]}; touch {GATE}"])

    def _keep_released(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self._gate()
            except Exception:  # noqa: BLE001, S112 - a pod being replaced, or the world closing
                continue

    def _watch_stalls(self) -> None:
        while not self._stop.wait(0.2):
            try:
                for cluster in self.clusters:
                    status = (self.world.rollout(cluster) or {}).get("status") or {}
                    if status.get("phase") == "Stalled":
                        self.stalled.append(f"{cluster}: {status.get('stalledReason')}: {status.get('message')}")
            except Exception:  # noqa: BLE001, S112 - the world is closing
                continue

    def finish(self) -> None:
        """Invariants: every cluster Ready at 2.0.0 on its image, never Stalled, no UpgradeStalled/StepInterrupted
        Event; each pod's migration and hook ran once."""
        self.release()
        deadline = time.monotonic() + 300
        for name in self.clusters:
            wait_for(f"{name} Ready at 2.0.0", lambda n=name: self._ready(n), max(1.0, deadline - time.monotonic()), 0.2)  # type: ignore[misc]
        assert not self.stalled, self.stalled
        bad = [
            f"{e['reason']}: {e['message']}"
            for e in self.world.rest.list("v1", "events", NS)["items"]
            if e.get("reason") in ("UpgradeStalled", "StepInterrupted", "RolloutHalted")
        ]
        assert not bad, bad
        for name in self.clusters:
            for pod in self.world.pods(name):
                pod_name = pod["metadata"]["name"]
                assert {c["image"] for c in pod["spec"]["containers"] if c["name"] == "app"} == {"gitops-kd/hello:2.0.0"}
                logs = self.world.sh(pod_name, f"cat {MIGRATE_LOG}; echo ---; cat {HOOK_LOG}")
                assert logs == "migrate\n---\nhook\n", (name, pod_name, logs)  # each step ran once

    def _ready(self, cluster: str) -> bool:
        assert not self.stalled, self.stalled  # fail at once: a Stalled rollout stays so
        return _ready_at(self.world.rollout(cluster)) == "2.0.0"

    def close(self) -> None:
        self._stop.set()
        for proc in self.procs.values():
            proc.stop()
        self._watch.join(5)
        self.world.close()


def _ready_at(rollout: dict[str, Any] | None) -> str | None:
    status = (rollout or {}).get("status") or {}
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or ())
    return str(status.get("appVersion")) if ready else None
