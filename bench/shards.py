#!/usr/bin/env python3
"""Benchmark (issue 31): N KDClusters on R replicas of `gitops-kd run --shards S`, R = 1, 2, 4 side by side.

Per R, one embedded cluster WITH its simulated controllers holds the same N clusters of 3 pods (bench/sim_fleet.py)
and a Git repo holds their specs (bench/fleet_scale.py's Fleet); R real `gitops-kd run` processes share the shards.
Measured in one run, per R:

  in sync        start of the replicas -> every shard held and every KDRollout Ready at 1.0.0 (adoption);
  steady CPU     each replica's CPU over a window once in sync, % of one core (mean and max over replicas);
  RSS            each replica's resident set then (mean and max);
  fleet upgrade  one commit bumping every app (all N clusters in one wave) -> all upgraded (read from the store);
  recover        SIGKILL one replica (R > 1) -> the others hold every shard again (about one lease duration).

    .venv/bin/python bench/shards.py --clusters 40                      # R = 1, 2, 4 at N = 40
    .venv/bin/python bench/shards.py --small                            # CI: N = 4, R = 1 and 2
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_scale import Fleet, upgrade_yaml, upgraded  # noqa: E402
from sim_fleet import seeded_cluster, wait_settled  # noqa: E402
from synth_repo import commit_files, init_bare  # noqa: E402
from synth_world import NS  # noqa: E402

from gitops_kd.kube.shardleases import holders as shard_holders  # noqa: E402
from gitops_kd.testing import wait_for  # noqa: E402
from kubeplumb.rest import RestClient  # noqa: E402

LEASE = ["--lease-duration", "4", "--lease-renew-deadline", "3", "--lease-retry-period", "0.5"]
LEASE_DURATION = 4.0
LOG_TAIL = 60  # lines of each replica's log printed when a run fails


def replica(
    i: int, kubeconfig: Path, origin: Path, work: Path, shards: int, *, lease: list[str] = LEASE, interval: str = "2"
) -> subprocess.Popen[bytes]:
    """`gitops-kd run --shards` as replica ``i`` (its log in ``work``), polling Git every ``interval`` seconds."""
    log = (work / f"replica-{i}.log").open("wb")
    env = {**os.environ, "POD_NAME": f"replica-{i}", "POD_NAMESPACE": NS}
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from gitops_kd.cli import main; main()",
            "run",
            "--repo",
            str(origin),
            "--kubeconfig",
            str(kubeconfig),
            "--namespace",
            NS,
            "--cache-dir",
            str(work / f"cache-{i}"),
            "--listen",
            "off",
            "--interval",
            interval,
            "--shards",
            str(shards),
            "--log-level",
            "warning",
            *lease,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )


def usage(pid: int) -> tuple[float, int]:
    """(CPU seconds, RSS KiB) of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS:"))
    return cpu, rss


def holders(rest: RestClient) -> dict[int, str]:
    """Shard -> the identity holding its Lease in the bench's namespace ("" when free)."""
    return shard_holders(rest, NS)


def wait(what: str, probe: Callable[[], object], timeout: float) -> float:
    """Seconds until ``probe()`` is truthy (polled every 0.1 s); the run ends naming ``what`` after ``timeout``."""
    t0 = time.monotonic()
    try:
        wait_for(what, probe, timeout, 0.1)
    except AssertionError as exc:
        raise SystemExit(str(exc)) from None
    return time.monotonic() - t0


def measure(n: int, r: int, shards: int, window: float, timeout: float, work: Path) -> dict[str, float]:
    fleet = Fleet.of(n)
    origin = init_bare(work / "origin.git")
    cluster = seeded_cluster(work, fleet.desired, record=True, commit=commit_files(origin, fleet.files, "fleet"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        rest = RestClient(cluster.api_client())
        wait_settled(cluster, fleet.desired, timeout)
        names = {c.name for c in fleet.desired.clusters.values()}
        t0 = time.monotonic()
        procs = [replica(i, cluster.kubeconfig, origin, work, shards) for i in range(r)]
        wait("every shard held", lambda: len(h := holders(rest)) == shards and all(h.values()), timeout)
        wait("adopted", lambda: upgraded(cluster, names, "1.0.0") == n, timeout)
        row: dict[str, float] = {"in_sync": time.monotonic() - t0}
        before = [usage(p.pid) for p in procs]
        time.sleep(window)
        after = [usage(p.pid) for p in procs]
        cpus = [100.0 * (a[0] - b[0]) / window for a, b in zip(after, before, strict=True)]
        row.update(
            cpu_mean=sum(cpus) / r,
            cpu_max=max(cpus),
            rss_mean=sum(a[1] for a in after) / r / 1024,
            rss_max=max(a[1] for a in after) / 1024,
        )
        commit_files(origin, {f"apps/{a}.yaml": upgrade_yaml(a, "2.0.0") for a in fleet.apps()}, "fleet to 2.0.0")
        row["upgrade"] = wait("fleet upgraded", lambda: upgraded(cluster, names, "2.0.0") == n, timeout)
        if r > 1:
            victim = procs[-1]
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
            row["recover"] = wait(
                "shards recovered",
                lambda: all(h and not h.startswith(f"replica-{r - 1}_") for h in holders(rest).values()),
                timeout,
            )
        return row
    except SystemExit:
        for i in range(len(procs)):  # the replicas' own words on what they waited for (the work dir is removed)
            tail = (work / f"replica-{i}.log").read_text(errors="replace").splitlines()[-LOG_TAIL:]
            print(f"--- replica-{i}.log, last {len(tail)} lines", *tail, sep="\n", file=sys.stderr)
        raise
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(60)
                except subprocess.TimeoutExpired:
                    p.kill()
        cluster.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=40)
    parser.add_argument("--replicas", default="1,2,4", help="replica counts R, comma-separated")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--window", type=float, default=20.0, help="seconds of the steady CPU window")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--small", action="store_true", help="CI: N = 4, R = 1 and 2, 4 shards, 3 s window")
    args = parser.parse_args(argv)
    if args.small:
        args.clusters, args.replicas, args.shards, args.window = 4, "1,2", 4, 3.0
    rows = {}
    for r in (int(x) for x in args.replicas.split(",")):
        with tempfile.TemporaryDirectory(prefix=f"shards-{r}-") as tmp:
            rows[r] = measure(args.clusters, r, args.shards, args.window, args.timeout, Path(tmp))
        print(f"R={r}: {rows[r]}", flush=True)
    one = rows[min(rows)]
    print(f"\nN = {args.clusters} clusters, {args.shards} shards, lease duration {LEASE_DURATION:g} s")
    print(
        "| replicas | in sync | steady CPU per replica (mean / max) | RSS per replica (mean / max) | "
        "fleet upgrade (ratio to R=1) | recover after a kill |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for r, row in rows.items():
        rec = f"{row['recover']:.1f} s" if "recover" in row else "-"
        print(
            f"| {r} | {row['in_sync']:.1f} s | {row['cpu_mean']:.1f} % / {row['cpu_max']:.1f} % | "
            f"{row['rss_mean']:.0f} / {row['rss_max']:.0f} MiB | {row['upgrade']:.1f} s "
            f"({row['upgrade'] / one['upgrade']:.2f}x) | {rec} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
