#!/usr/bin/env python3
"""Benchmark (issue 31): how large a fleet sharded replicas hold on this machine, and where the cost goes.

A lighter synthetic fleet than bench/shards.py: a BARE embedded API server (no simulated KubeDirector, StatefulSet
controller or kubelet) seeded through the API with N KDClusters already in sync with Git (bench/seed_cluster.py: 3
Ready pods, 2 StatefulSets, 3 ClusterIP member Services and an Idle KDRollout each, recording the repository's real
commit),
then R replicas of `gitops-kd run --shards S` adopt it. Measured in one run:

  seed           N clusters created through the API; the API server's RSS after it;
  start-up       replicas started -> every shard held and every KDRollout carrying the drift baseline (each
                 cluster's in-sync record, written once by the replica holding its shard);
  per replica    RSS and CPU over a steady window after start-up (mean and max over the replicas);
  recover        SIGKILL one replica (R > 1) -> the others hold every shard again.

    .venv/bin/python bench/shards_scale.py --clusters 10000 --replicas 4
    .venv/bin/python bench/shards_scale.py --clusters 200 --replicas 2        # a quick look
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_scale import PER_APP, WORKERS  # noqa: E402
from seed_cluster import seed_fleet  # noqa: E402
from shards import holders, replica, usage, wait  # noqa: E402
from synth_repo import commit_files, init_bare  # noqa: E402
from synth_world import NS, desired_from_files, fleet_files  # noqa: E402

from gitops_kd.crds import gitops_kd_crds  # noqa: E402
from kdsim.cluster import EmbeddedCluster  # noqa: E402
from kubeplumb.rest import RestClient  # noqa: E402

LEASE = ["--lease-duration", "15", "--lease-renew-deadline", "10", "--lease-retry-period", "2"]


def baselines(rest: RestClient, commit: str) -> int:
    """KDRollouts whose status records the cluster in sync at ``commit`` (the drift baseline)."""
    return sum(
        1
        for ro in rest.list("gitops-kd.io/v1alpha1", "kdrollouts", NS)["items"]
        if (ro.get("status") or {}).get("syncedCommit") == commit
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=10000)
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--window", type=float, default=60.0, help="seconds of the steady CPU window")
    parser.add_argument("--timeout", type=float, default=3600.0)
    args = parser.parse_args(argv)
    n, r = args.clusters, args.replicas
    # ClusterIP member Services: NodePorts (KubeDirector's default) run out at 2,768 per cluster (30000-32767), on a
    # real API server as on the embedded one, so a fleet of thousands of KDClusters cannot use them
    files = {
        path: text.replace("spec:\n  app:", "spec:\n  serviceType: ClusterIP\n  app:", 1)
        if path.startswith("clusters/")
        else text
        for path, text in fleet_files(-(-n // PER_APP), n, PER_APP, WORKERS).items()
    }
    with tempfile.TemporaryDirectory(prefix="shards-scale-") as tmp:
        work = Path(tmp)
        t0 = time.monotonic()
        cluster = EmbeddedCluster(work / "cluster", controllers=False, crds=gitops_kd_crds()).start()
        procs: list[subprocess.Popen[bytes]] = []
        try:
            rest = RestClient(cluster.api_client())
            origin = init_bare(work / "origin.git")
            head = commit_files(origin, files, "fleet")
            objects = seed_fleet(rest, desired_from_files(files), commit=head)
            seeded = time.monotonic() - t0
            server_rss = usage(os.getpid())[1] / 1024  # the embedded API server runs in this process
            print(
                f"seed: {n} clusters, {objects} objects in {seeded:.0f} s; this process (API server) RSS {server_rss:.0f} MiB",
                flush=True,
            )
            t1 = time.monotonic()
            procs = [replica(i, cluster.kubeconfig, origin, work, args.shards, lease=LEASE, interval="30") for i in range(r)]
            wait("every shard held", lambda: len(h := holders(rest)) == args.shards and all(h.values()), args.timeout)
            held = time.monotonic() - t1
            while baselines(rest, head) < n:  # a LIST of every KDRollout: not more often than every 5 s
                if time.monotonic() - t1 > args.timeout:
                    raise SystemExit(f"every cluster's baseline recorded: not within {args.timeout:.0f}s")
                time.sleep(5.0)
            started = time.monotonic() - t1
            print(
                f"start-up: every shard held after {held:.1f} s; every cluster adopted (baseline recorded) after {started:.1f} s",
                flush=True,
            )
            before = [usage(p.pid) for p in procs]
            time.sleep(args.window)
            after = [usage(p.pid) for p in procs]
            cpus = [100.0 * (a[0] - b[0]) / args.window for a, b in zip(after, before, strict=True)]
            rss = [a[1] / 1024 for a in after]
            start_cpu = [b[0] for b in before]
            print(
                f"per replica, steady over {args.window:.0f} s: CPU {sum(cpus) / r:.1f} % (max {max(cpus):.1f} %) of a "
                f"core; RSS {sum(rss) / r:.0f} MiB (max {max(rss):.0f} MiB); CPU spent in start-up "
                f"{sum(start_cpu) / r:.0f} s (max {max(start_cpu):.0f} s)",
                flush=True,
            )
            print(
                f"per cluster: RSS {1024 * sum(rss) / r / n:.0f} KiB per replica (the whole fleet is watched by "
                f"each), start-up CPU {1000 * sum(start_cpu) / n:.1f} ms summed over the replicas",
                flush=True,
            )
            if r > 1:
                procs[-1].send_signal(signal.SIGKILL)
                procs[-1].wait(10)
                recover = wait(
                    "shards recovered",
                    lambda: all(h and not h.startswith(f"replica-{r - 1}_") for h in holders(rest).values()),
                    args.timeout,
                )
                print(f"recover: the others hold every shard {recover:.1f} s after a SIGKILL (lease 15 s)", flush=True)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    try:
                        p.wait(60)
                    except subprocess.TimeoutExpired:
                        p.kill()
            cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
