#!/usr/bin/env python3
"""Benchmark (issue 14): what one step costs as the fleet grows, N = 10, 100, 500, 1,000 side by side.

Per N, an embedded cluster WITH its simulated controllers (KubeDirector, StatefulSet controller,
kubelet) holds N KDClusters of 3 pods (bench/sim_fleet.py: the fleet is created through the API
and brought up by those controllers), and a Git repo holds the same specs: N-1 clusters on apps of
5 clusters each (app-0000 ...) plus one "solo" cluster on an app of its own. The gitops-kd
Controller runs in a child process (so that its CPU time and RSS are its own, not the emulator's)
and is driven over a pipe through its public API (start, kick, trigger_poll, last_plan). Measured:

  in-sync reconcile     kick() to the next plan of the whole fleet returned (median of 5), the fleet in sync;
                        and one cluster's key (Manager.enqueue) to the next plan of its part returned;
  steady CPU            the controller process's CPU time over a window, in sync, as % of one core;
  RSS                   the controller process's resident set once in sync; per cluster beyond a fixed
                        base = the slope between the smallest and each larger N;
  one-cluster upgrade   commit bumping the solo app (1 cluster) -> that cluster upgraded (KDRollout Idle
                        at the new version, every pod Ready), poll to done;
  one-app commit        commit bumping app-0000 (5 clusters) -> its 5 clusters upgraded, poll to done;
  fleet upgrade         one commit bumping every app (all N clusters, one wave) -> all upgraded; run only
                        for N <= --upgrade-max (a controller that reconciles the whole fleet per action
                        needs hours at 500); the ratio to the one-cluster upgrade should grow sub-linearly.

"Done" is read from the cluster (the KDRollouts and pods in the emulator's store), not from the
controller, so the figures mean the same before and after the controller's per-cluster work queue.

    .venv/bin/python bench/fleet_scale.py                         # N = 10, 100, 500, 1000
    .venv/bin/python bench/fleet_scale.py --sizes 10,100 --upgrade-max 100
    .venv/bin/python bench/fleet_scale.py --small                 # CI: N = 2 and 4, short windows
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim_fleet import cpu_seconds, seeded_cluster, wait_settled  # noqa: E402
from synth_repo import app_name, app_yaml, commit_files, init_bare  # noqa: E402
from synth_world import NS, cluster_name, cluster_yaml, desired_from_files, fleet_files  # noqa: E402

from gitops_kd.source.model import DesiredState  # noqa: E402
from kdsim.cluster import EmbeddedCluster  # noqa: E402

PER_APP = 5
WORKERS = 2  # worker members per cluster: 3 pods with the controller role
ROLLOUT_GROUP = "gitops-kd.io"


def upgrade_yaml(name: str, version: str) -> str:
    """The app at `version`, with an upgrade stanza accepting every older version (keep all data)."""
    return (
        app_yaml(name, version)
        + """  upgrade:
    roleOrder: [controller, worker]
    from:
      - versions: ">=1.0.0 <99.0.0"
        default: keep
"""
    )


@dataclass(frozen=True)
class Fleet:
    """Spec files of N clusters: N-1 on apps of PER_APP clusters, one (the last) on an app of its own."""

    files: dict[str, str]
    solo_app: str
    solo_cluster: str

    @classmethod
    def of(cls, n: int) -> Fleet:
        shared = n - 1
        apps = max(1, -(-shared // PER_APP))
        files = fleet_files(apps, shared, PER_APP, WORKERS)
        solo_app, solo_cluster = app_name(apps), cluster_name(shared)
        files[f"apps/{solo_app}.yaml"] = app_yaml(solo_app, "1.0.0")
        files[f"clusters/{solo_cluster}.yaml"] = cluster_yaml(solo_cluster, solo_app, WORKERS)
        return cls(files, solo_app, solo_cluster)

    @property
    def desired(self) -> DesiredState:
        return desired_from_files(self.files)

    def clusters_of(self, apps: set[str]) -> set[str]:
        return {c.name for c in self.desired.clusters.values() if c.app in apps}

    def apps(self) -> set[str]:
        return {a.name for a in self.desired.apps.values()}


# -- the controller, in a child process -----------------------------------------------------------------


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _child(conn: Connection, kubeconfig: str, origin: str, cache: str, workers: int) -> None:
    """Run a Controller on the cluster and answer the parent's commands until "stop"."""
    import kubernetes.client
    import kubernetes.config

    from gitops_kd.controller import Options, build_manager
    from gitops_kd.controller.options import LeaseOptions
    from gitops_kd.plan.planner import plan as real_plan
    from gitops_kd.source import GitSource

    logging.basicConfig(level=logging.WARNING)
    calls: list[tuple[str, bool, float, bool]] = []  # (commit, plan empty, monotonic time it returned, partial)
    changed = threading.Condition()

    def planner(desired: Any, observed: Any, *, now: Any, **options: Any) -> Any:
        result = real_plan(desired, observed, now=now, **options)
        with changed:
            calls.append((desired.commit, result.empty, time.monotonic(), bool(options.get("partial"))))
            changed.notify_all()
        return result

    base_rss = _rss_kib()
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    api = kubernetes.client.ApiClient(configuration)
    options = Options(
        namespace=NS,
        scope=NS,
        poll_interval=3600.0,
        workers=workers,
        record=False,
        metrics=False,
        lease=LeaseOptions(elect=False),
    )
    controller = build_manager(options, api_client=api, source=GitSource(origin, cache_dir=cache), planner=planner)
    controller.start(sync_timeout=600)

    def wait_call(since: int, timeout: float, partial: bool = False) -> tuple[str, bool, float, bool] | None:
        """The first plan after call ``since`` of the whole fleet (or, with ``partial``, of one key's part)."""
        deadline = time.monotonic() + timeout
        with changed:
            while True:
                found = next((c for c in calls[since:] if c[3] == partial), None)
                if found is not None:
                    return found
                if not changed.wait(max(0.0, deadline - time.monotonic())):
                    return None

    def wait_empty(timeout: float) -> bool:
        """An empty plan of the newest polled commit (the fleet is in sync with Git)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with changed:
                whole = [c for c in calls if not c[3]]
                if whole and whole[-1][1]:
                    return True
                changed.wait(1.0)
            controller.kick()
        return False

    while True:
        command, arg = conn.recv()
        if command == "stop":
            break
        if command == "in_sync":
            conn.send(wait_empty(arg))
        elif command == "kick":
            times = []
            for _ in range(arg):
                n = len(calls)
                t0 = time.monotonic()
                controller.kick()
                call = wait_call(n, 120)
                times.append(call[2] - t0 if call is not None else float("nan"))
                time.sleep(0.2)  # let the reconcile finish before the next kick
            conn.send(times)
        elif command == "reconcile_one":  # one cluster's key (per-key controllers), in sync
            times = []
            for _ in range(arg[1]):
                n = len(calls)
                t0 = time.monotonic()
                if not hasattr(controller, "enqueue"):
                    times.append(float("nan"))
                    continue
                controller.enqueue("cluster", (NS, arg[0]))
                call = wait_call(n, 120, partial=True)
                times.append(call[2] - t0 if call is not None else float("nan"))
                time.sleep(0.2)
            conn.send(times)
        elif command == "usage":
            usage = resource.getrusage(resource.RUSAGE_SELF)
            conn.send((usage.ru_utime + usage.ru_stime, _rss_kib(), base_rss, controller.actions_executed))
        elif command == "poll":
            controller.trigger_poll()
            conn.send(True)
    controller.stop()
    controller.source.close()
    conn.send("stopped")


class ControllerProcess:
    """The parent's handle on the child running the controller."""

    def __init__(self, kubeconfig: Path, origin: Path, cache: Path, workers: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_child, args=(child, str(kubeconfig), origin.as_uri(), str(cache), workers), daemon=True)
        self.proc.start()

    def call(self, command: str, arg: Any = None, timeout: float = 3600.0) -> Any:
        self.conn.send((command, arg))
        if not self.conn.poll(timeout):
            raise SystemExit(f"the controller process did not answer {command!r} within {timeout:.0f}s")
        return self.conn.recv()

    def stop(self) -> None:
        try:
            self.call("stop", timeout=120)
        finally:
            self.proc.join(10)
            if self.proc.is_alive():
                self.proc.kill()


# -- measurements -------------------------------------------------------------------------------------


def upgraded(cluster: EmbeddedCluster, names: set[str], version: str) -> int:
    """How many of the KDClusters `names` have finished upgrading to `version`: KDRollout Idle at it, every
    pod of the cluster Ready and none terminating (read from the store without copying)."""

    def rollout_done(key: Any, obj: dict[str, Any]) -> bool:
        status = obj.get("status") or {}
        return key[3] in names and status.get("phase") == "Idle" and status.get("appVersion") == version

    done = {k[3] for k, _ in cluster.store.scan_resource(ROLLOUT_GROUP, "kdrollouts", rollout_done)}

    def pod_not_ready(key: Any, obj: dict[str, Any]) -> str | None:
        owner = ((obj.get("metadata") or {}).get("labels") or {}).get("kubedirector.hpe.com/kdcluster")
        if owner not in done:
            return None
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or ()
        )
        return None if ready and not obj["metadata"].get("deletionTimestamp") else str(owner)

    return len(done - {v for _, v in cluster.store.scan_resource("", "pods", pod_not_ready)})


def upgrade(
    cluster: EmbeddedCluster,
    controller: ControllerProcess,
    origin: Path,
    fleet: Fleet,
    apps: set[str],
    version: str,
    timeout: float,
) -> float:
    """Commit `apps` at `version`, poll, and return the seconds until their clusters are all upgraded."""
    targets = fleet.clusters_of(apps)
    commit_files(origin, {f"apps/{a}.yaml": upgrade_yaml(a, version) for a in apps}, f"{len(apps)} apps to {version}")
    t0 = time.monotonic()
    controller.call("poll")
    while (done := upgraded(cluster, targets, version)) < len(targets):
        if time.monotonic() - t0 > timeout:
            raise SystemExit(f"upgrade to {version}: {done}/{len(targets)} clusters done after {timeout:.0f}s")
        time.sleep(0.25)
    return time.monotonic() - t0


@dataclass
class Row:
    """The figures of one fleet size."""

    n: int
    seed: float = 0.0
    emulator_idle: float = 0.0
    in_sync_ms: float = 0.0
    one_key_ms: float | None = None
    steady_cpu: float = 0.0
    rss_kib: int = 0
    base_kib: int = 0
    one_cluster: float = 0.0
    one_app: float = 0.0
    fleet: float | None = None
    notes: list[str] = field(default_factory=list)


def measure(n: int, args: argparse.Namespace, work: Path, say: Callable[[str], None]) -> Row:
    row = Row(n)
    fleet = Fleet.of(n)
    t0 = time.monotonic()
    cluster = seeded_cluster(work, fleet.desired)
    controller: ControllerProcess | None = None
    try:
        wait_settled(cluster, fleet.desired, args.timeout)
        row.seed = time.monotonic() - t0
        c0, w0 = cpu_seconds(), time.monotonic()
        time.sleep(args.window)
        row.emulator_idle = 100.0 * (cpu_seconds() - c0) / (time.monotonic() - w0)
        say(
            f"N={n}: fleet up through the simulated controllers in {row.seed:.1f} s; emulator idle "
            f"{row.emulator_idle:.1f} % of a core"
        )
        origin = init_bare(work / "origin.git")
        commit_files(origin, fleet.files, "fleet")
        controller = ControllerProcess(cluster.kubeconfig, origin, work / "source", args.workers)
        if not controller.call("in_sync", args.timeout, timeout=args.timeout + 60):
            raise SystemExit(f"N={n}: the controller's plan did not become empty within {args.timeout:.0f}s")
        kicks = controller.call("kick", 5)
        row.in_sync_ms = 1000 * statistics.median(kicks)
        ones = controller.call("reconcile_one", (fleet.solo_cluster, 5))
        row.one_key_ms = 1000 * statistics.median(ones) if ones and ones[0] == ones[0] else None
        cpu0, _, _, _ = controller.call("usage")
        w0 = time.monotonic()
        time.sleep(args.window)
        cpu1, row.rss_kib, row.base_kib, _ = controller.call("usage")
        row.steady_cpu = 100.0 * (cpu1 - cpu0) / (time.monotonic() - w0)
        say(
            f"N={n}: in-sync reconcile {row.in_sync_ms:.0f} ms, steady CPU {row.steady_cpu:.2f} %, "
            f"RSS {row.rss_kib / 1024:.0f} MiB"
        )
        row.one_cluster = upgrade(cluster, controller, origin, fleet, {fleet.solo_app}, "2.0.0", args.timeout)
        row.one_app = upgrade(cluster, controller, origin, fleet, {app_name(0)}, "2.0.0", args.timeout)
        say(f"N={n}: one-cluster upgrade {row.one_cluster:.1f} s, one-app commit (5 clusters) {row.one_app:.1f} s")
        if n <= args.upgrade_max:
            row.fleet = upgrade(cluster, controller, origin, fleet, fleet.apps(), "3.0.0", args.timeout)
            say(f"N={n}: fleet upgrade ({n} clusters, one wave) {row.fleet:.1f} s")
    finally:
        if controller is not None:
            controller.stop()
        cluster.stop()
    return row


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a is not None and b else "-"


def report(rows: list[Row], upgrade_max: int) -> list[str]:
    """The table and the target ratios (first row = the reference size)."""

    def cols(fn: Callable[[Row], str]) -> str:
        return " | ".join(fn(r) for r in rows)

    base = rows[0]
    out = [
        "| clusters in the fleet | " + cols(lambda r: f"{r.n:,}") + " |",
        "|---|" + "---|" * len(rows),
        "| emulator: fleet up (s) / idle CPU | " + cols(lambda r: f"{r.seed:.0f} s / {r.emulator_idle:.1f} %") + " |",
        "| in-sync reconcile of the fleet, kick to plan returned | " + cols(lambda r: f"{r.in_sync_ms:,.0f} ms") + " |",
        "| in-sync reconcile of one cluster (its key) | "
        + cols(lambda r: f"{r.one_key_ms:,.1f} ms" if r.one_key_ms is not None else "- (one key)")
        + " |",
        "| one-cluster upgrade, poll to done | " + cols(lambda r: f"{r.one_cluster:.1f} s") + " |",
        "| one-app commit (5 clusters), poll to done | " + cols(lambda r: f"{r.one_app:.1f} s") + " |",
        "| fleet upgrade, N clusters in one wave | "
        + cols(lambda r: f"{r.fleet:.1f} s" if r.fleet is not None else f"- (N > {upgrade_max})")
        + " |",
        "| controller CPU, steady state | " + cols(lambda r: f"{r.steady_cpu:.2f} %") + " |",
        "| controller RSS | " + cols(lambda r: f"{r.rss_kib / 1024:.0f} MiB") + " |",
        "| RSS per cluster beyond the base | "
        + cols(lambda r: f"{(r.rss_kib - base.rss_kib) / (r.n - base.n):.0f} KiB" if r.n > base.n else "-")
        + " |",
        "",
        f"-- ratios against the targets (reference N={base.n})",
    ]
    for r in rows[1:]:
        out.append(
            f"N={r.n}: in-sync reconcile of one cluster {ratio(r.one_key_ms, base.one_key_ms)} of N={base.n} "
            f"(target within 2x at 500; the whole fleet's {ratio(r.in_sync_ms, base.in_sync_ms)}); "
            f"one-app commit {ratio(r.one_app, base.one_app)} (target within 2x "
            f"at 500)"
        )
    for r in rows:
        per = (r.rss_kib - base.rss_kib) / (r.n - base.n) if r.n > base.n else None
        out.append(
            f"N={r.n}: steady CPU {r.steady_cpu:.2f} % of a core (target < 2 % at 500); "
            + (f"RSS {per:.0f} KiB per cluster beyond the base (target < 100 KiB); " if per is not None else "")
            + (
                f"fleet upgrade / one-cluster upgrade {ratio(r.fleet, r.one_cluster)} for {r.n} clusters "
                f"(linear would be {r.n}x; target sub-linear)"
                if r.fleet is not None
                else "fleet upgrade not run"
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,500,1000", help="fleet sizes N, comma-separated")
    parser.add_argument("--upgrade-max", type=int, default=100, help="largest N whose fleet-wide upgrade is run")
    parser.add_argument(
        "--window",
        type=float,
        default=65.0,
        help="seconds of each idle CPU window (default 65: two of the controller's 30 s idle resyncs)",
    )
    parser.add_argument("--workers", type=int, default=max(2, os.cpu_count() or 2), help="controller workers (Options.workers)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for each step")
    parser.add_argument("--small", action="store_true", help="CI's tiny configuration: N = 2 and 4, 3 s windows")
    args = parser.parse_args(argv)
    if args.small:
        args.sizes, args.window, args.timeout = "2,4", 3.0, 300.0
    try:
        sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        parser.error(f"--sizes {args.sizes!r}: not a comma-separated list of integers")
    if not sizes or sizes[0] < 2:
        parser.error("--sizes: every N must be at least 2 (one solo cluster and one on a shared app)")
    logging.basicConfig(level=logging.WARNING)
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix=f"bench-fleet-{n}-") as tmp:
            rows.append(measure(n, args, Path(tmp), lambda line: print(line, flush=True)))
    print(
        f"\nfleet_scale: KDClusters of {1 + WORKERS} pods, {PER_APP} per app plus one solo cluster; controller in a child process"
    )
    print("\n".join(report(rows, args.upgrade_max)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
