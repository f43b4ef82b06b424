#!/usr/bin/env python3
"""Benchmark: plan() over a large fleet, in sync and with one app changed: time and peak memory.

Builds DesiredState and ObservedState objects directly (bench/synth_world.py: N KDApps, M KDClusters,
K clusters per used app, each cluster a controller and `--workers` workers with storage; the observed
state is KubeDirector's StatefulSets with gitops-kd's owned fields, every rollout finished), pins the
process to one CPU, measures the peak allocation of a first (cold) `plan(desired, observed, now=...)`
with tracemalloc, then times R more with tracemalloc off (median and fastest). Checks that the in-sync
plan is empty and that the one-app plan touches only that app's clusters.
Targets: each plan < 1 s and < 500 MiB on one core.

    .venv/bin/python bench/plan_scale.py               # 1,000 apps, 100 clusters (5 per used app)
    .venv/bin/python bench/plan_scale.py --small       # 100 apps, 10 clusters
    .venv/bin/python bench/plan_scale.py --apps 5 --clusters 3 --repeat 1 [--profile]
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import os
import pstats
import resource
import statistics
import sys
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_world import T0, clusters_of, desired_fleet, observed_in_sync, with_app_changed  # noqa: E402

from gitops_kd.drift.classify import Baselines, classify  # noqa: E402
from gitops_kd.observe import ObservedState  # noqa: E402
from gitops_kd.plan import Plan, plan  # noqa: E402
from gitops_kd.source.model import DesiredState  # noqa: E402

TARGET_SECONDS = 1.0
TARGET_MIB = 500.0
MIB = 1024 * 1024


@dataclass(frozen=True)
class Measured:
    """One scenario: the plan, median and fastest wall time over the repeats, tracemalloc's peak of plan()."""

    name: str
    plan: Plan
    seconds: float
    fastest: float
    peak_bytes: int


def measure(name: str, desired: DesiredState, observed: ObservedState, repeat: int) -> Measured:
    """Peak memory of a first (cold) plan() under tracemalloc, then `repeat` timed plans without it."""
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    plan(desired, observed, now=T0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    times: list[float] = []
    result = Plan()
    for _ in range(repeat):
        start = time.perf_counter()
        result = plan(desired, observed, now=T0)
        times.append(time.perf_counter() - start)
    return Measured(name, result, statistics.median(times), min(times), peak - base)


def measure_drift(desired: DesiredState, observed: ObservedState, in_sync: Plan, repeat: int) -> tuple[float, int]:
    """The drift stage after the in-sync plan, every cluster and app seen in sync at the commit (the steady state of
    a running controller): (median seconds of `repeat` after a first cold call, drifts found)."""
    baselines = Baselines({k: desired.commit for k in desired.clusters}, {k: desired.commit for k in desired.apps})
    _, report = classify(in_sync, observed, baselines, desired=desired, now=T0)
    times: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        classify(in_sync, observed, baselines, desired=desired, now=T0)
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(report.drifts)


def profile(desired: DesiredState, observed: ObservedState, title: str) -> None:
    prof = cProfile.Profile()
    prof.enable()
    plan(desired, observed, now=T0)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(20)
    print(f"-- profile: {title} (top 20 by cumulative time)")
    print(out.getvalue())


def pin_one_cpu() -> str:
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    return "not pinned (no sched_setaffinity)"


def run(apps: int, clusters: int, per_app: int, workers: int, repeat: int, do_profile: bool) -> int:
    pinned = pin_one_cpu()
    start = time.perf_counter()
    desired = desired_fleet(apps, clusters, per_app, workers)
    observed = observed_in_sync(desired)
    changed = with_app_changed(desired, 0)
    build_seconds = time.perf_counter() - start
    pods = sum(len(c.all_pods()) for c in observed.clusters.values())
    sync = measure("in sync", desired, observed, repeat)
    one = measure("one app changed", changed, observed, repeat)
    drift_seconds, drifts = measure_drift(desired, observed, sync.plan, repeat)

    kinds = collections.Counter(type(a).__name__ for a in one.plan.actions)
    touched = {a.cluster_key for a in one.plan.actions if a.cluster_key is not None}
    users = clusters_of(changed, 0)
    ok = sync.plan.empty and not one.plan.refused and touched == users and drifts == 0
    print(
        f"plan_scale: {apps} KDApps, {clusters} KDClusters ({per_app} per used app), {pods} pods, "
        f"{sum(len(c.statefulsets) for c in observed.clusters.values())} StatefulSets"
    )
    print("-- counts (machine-independent)")
    print(f"in sync: actions {len(sync.plan.actions)}, refusals {len(sync.plan.refusals)} (want 0 and 0)")
    print(
        f"one app changed: actions {len(one.plan.actions)}, refusals {len(one.plan.refusals)}, "
        f"clusters touched {len(touched)} of {clusters} (the app has {len(users)})"
    )
    print("  by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    print(f"only the changed app's clusters touched: {'yes' if touched == users else 'NO'}")
    print(f"-- times and memory (this machine, {pinned})")
    print(f"build desired + observed: {build_seconds:.2f} s")
    for m in (sync, one):
        t_ok = "met" if m.seconds < TARGET_SECONDS else "MISSED"
        m_ok = "met" if m.peak_bytes / MIB < TARGET_MIB else "MISSED"
        print(
            f"{m.name:16s} plan: median {m.seconds * 1000:7.1f} ms, fastest {m.fastest * 1000:7.1f} ms of {repeat} "
            f"(target < {TARGET_SECONDS:.0f} s: {t_ok}); peak allocated {m.peak_bytes / MIB:6.1f} MiB "
            f"(target < {TARGET_MIB:.0f} MiB: {m_ok})"
        )
    print(
        f"drift stage, in sync: median {drift_seconds * 1000:7.1f} ms of {repeat} "
        f"(target < {TARGET_SECONDS:.0f} s: {'met' if drift_seconds < TARGET_SECONDS else 'MISSED'}); drifts {drifts} (want 0)"
    )
    print(f"process max RSS (inputs included): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if do_profile:
        profile(desired, observed, "in sync")
        profile(changed, observed, "one app changed")
    if not ok:
        print("error: unexpected plan (see counts above)", file=sys.stderr)
        print(one.plan.describe() if sync.plan.empty else sync.plan.describe(), file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=1000, help="KDApps (default 1000)")
    parser.add_argument("--clusters", type=int, default=100, help="KDClusters (default 100)")
    parser.add_argument("--per-app", type=int, default=5, help="clusters per used app (default 5)")
    parser.add_argument("--workers", type=int, default=2, help="worker members per cluster (default 2)")
    parser.add_argument("--repeat", type=int, default=5, help="timed plans per scenario (default 5)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of each scenario")
    parser.add_argument("--small", action="store_true", help="100 apps, 10 clusters")
    args = parser.parse_args(argv)
    if args.small:
        args.apps, args.clusters = 100, 10
    if min(args.apps, args.clusters, args.per_app, args.workers, args.repeat) < 1:
        parser.error("--apps, --clusters, --per-app, --workers and --repeat must be at least 1")
    if args.clusters > args.apps * args.per_app:
        parser.error(f"{args.clusters} clusters need at least {-(-args.clusters // args.per_app)} apps at {args.per_app} per app")
    return run(args.apps, args.clusters, args.per_app, args.workers, args.repeat, args.profile)


if __name__ == "__main__":
    sys.exit(main())
