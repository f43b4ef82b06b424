#!/usr/bin/env python3
"""Benchmark: API requests and writes of the controller's reconciles, in sync and after a one-app commit.

A bare embedded cluster (`controllers=False`: no simulated KubeDirector, StatefulSet controller or
kubelet, which would take minutes to bring up 100 clusters on 2 cores) is seeded through the API with
a fleet already in sync with Git (bench/seed_cluster.py: N KDApps, M KDClusters with StatefulSets,
Ready pods, member Services, Idle KDRollouts). The Git repo holds the same specs. A real Controller
(informers, planner, executor) is started on it; every request of its ApiClient is counted by
wrapping the client's REST transport (bench/request_log.py; the embedded server has no request
counter). Three windows are measured:
  1. start-up: informers LIST+WATCH, first poll and the first (empty) plan;
  2. one reconcile in sync (kick): target zero writes and no LIST/GET (reads come from watch caches);
  3. a commit bumping one app used by K clusters: every reconcile until only Wait actions remain
     (with no StatefulSet controller running, the patched StatefulSets never report the new
     generation, so the rollout pauses there): target writes only for that app and its clusters.

    .venv/bin/python bench/reconcile_requests.py            # 1,000 apps, 100 clusters (5 per used app)
    .venv/bin/python bench/reconcile_requests.py --small    # 100 apps, 10 clusters
    .venv/bin/python bench/reconcile_requests.py --apps 5 --clusters 2 --per-app 2
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from request_log import Request, RequestLog, summary  # noqa: E402
from seed_cluster import seed_fleet  # noqa: E402
from synth_repo import app_name, commit_files, init_bare  # noqa: E402
from synth_world import NEW_VERSION, NS, clusters_of, desired_from_files, fleet_files, upgradable_app_yaml  # noqa: E402

from gitops_kd.controller import Manager, Options, build_manager  # noqa: E402
from gitops_kd.controller.options import LeaseOptions  # noqa: E402
from gitops_kd.crds import KDROLLOUT_CRD, load_crd  # noqa: E402
from gitops_kd.plan.actions import Plan, Wait  # noqa: E402
from gitops_kd.plan.planner import plan as real_plan  # noqa: E402
from gitops_kd.source import GitSource  # noqa: E402
from kdsim.cluster import EmbeddedCluster  # noqa: E402
from kubeplumb.rest import RestClient  # noqa: E402

T = TypeVar("T")
CHANGED_APP = 0


@dataclass(frozen=True)
class PlanCall:
    """One call of the planner by the controller: the commit planned, the plan, request-log marks, duration."""

    commit: str
    plan: Plan
    mark_before: int
    mark_after: int
    seconds: float
    partial: bool = False  # a per-key plan of one cluster or app (not the whole fleet)

    @property
    def only_waits(self) -> bool:
        return all(isinstance(a, Wait) for a in self.plan.actions)


class RecordingPlanner:
    """The real planner, recording every call (the controller takes `planner=`)."""

    def __init__(self, log: RequestLog) -> None:
        self.log = log
        self.calls: list[PlanCall] = []
        self._lock = threading.Lock()

    def __call__(self, desired: Any, observed: Any, *, now: Any, **options: Any) -> Plan:
        before = self.log.mark()
        start = time.perf_counter()
        result = real_plan(desired, observed, now=now, **options)
        call = PlanCall(
            desired.commit, result, before, self.log.mark(), time.perf_counter() - start, bool(options.get("partial"))
        )
        with self._lock:
            self.calls.append(call)
        return result

    def count(self) -> int:
        with self._lock:
            return len(self.calls)

    def last(self) -> PlanCall | None:
        """The last plan of the whole fleet."""
        with self._lock:
            return next((c for c in reversed(self.calls) if not c.partial), None)


def wait_for(what: str, probe: Callable[[], T | None], timeout: float) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.02)
    raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")


_CLUSTER = re.compile(r"(c-\d{4})")


def owner(req: Request, apps: set[str]) -> str:
    """The app or cluster a request is for: the app name, or the c-NNNN cluster its object belongs to."""
    target = req.target()
    name = target.rsplit("/", 1)[-1]
    if name in apps:
        return name
    match = _CLUSTER.search(target)
    return match.group(1) if match else target


def reads(requests: list[Request]) -> Counter[str]:
    return Counter(r.verb for r in requests if not r.write)


def run(apps: int, clusters: int, per_app: int, workers: int, work: Path, timeout: float) -> int:
    files = fleet_files(apps, clusters, per_app, workers)
    desired = desired_from_files(files)
    users = {k[1] for k in clusters_of(desired, CHANGED_APP)}
    app_names = set(k[1] for k in desired.apps)
    started = time.perf_counter()
    cluster = EmbeddedCluster(work / "cluster", controllers=False, crds=[load_crd(KDROLLOUT_CRD)]).start()
    controller: Manager | None = None
    try:
        seeded = seed_fleet(RestClient(cluster.api_client()), desired)
        origin = init_bare(work / "origin.git")
        head1 = commit_files(origin, files, "fleet")
        seed_seconds = time.perf_counter() - started

        api = cluster.api_client()
        log = RequestLog(api).install()
        planner = RecordingPlanner(log)
        executed: list[str] = []
        source = GitSource(origin.as_uri(), cache_dir=work / "source")
        options = Options(
            namespace=NS, scope=NS, poll_interval=3600.0, record=False, metrics=False, lease=LeaseOptions(elect=False)
        )
        controller = build_manager(
            options, api_client=api, source=source, planner=planner, on_action=lambda a, o: executed.append(type(a).__name__)
        )
        # 1. start-up
        t0 = time.perf_counter()
        controller.start(sync_timeout=timeout)
        first = wait_for(
            "the first plan of the seeded commit",
            lambda: next((c for c in list(planner.calls) if c.commit == head1), None),
            timeout,
        )
        startup = log.since(0, first.mark_after)
        startup_seconds = time.perf_counter() - t0
        if not first.plan.empty:
            print("error: the seeded fleet is not in sync:\n" + first.plan.describe()[:4000], file=sys.stderr)
            return 1
        # 1b. the drift stage records each cluster in sync on its KDRollout once (the seed has no such record)
        wait_for(
            "the drift stage's in-sync records",
            lambda: (
                (p := controller.last_plan) is not None  # type: ignore[union-attr]
                and p.empty
            ),
            timeout,
        )
        records = log.since(first.mark_after)
        # 2. one reconcile in sync
        n, mark = planner.count(), log.mark()
        t0 = time.perf_counter()
        controller.kick()
        sync_call = wait_for(
            "the in-sync reconcile", lambda: next((c for c in planner.calls[n:] if not c.partial), None), timeout
        )
        sync_seconds = time.perf_counter() - t0
        in_sync = log.since(mark, sync_call.mark_after)
        # 3. one app changed
        name = app_name(CHANGED_APP)
        mark, done_before = log.mark(), len(executed)
        head2 = commit_files(origin, {f"apps/{name}.yaml": upgradable_app_yaml(name, NEW_VERSION)}, f"{name} {NEW_VERSION}")
        t0 = time.perf_counter()
        controller.trigger_poll()
        last = wait_for(
            "the one-app commit to be reconciled up to its Wait actions",
            lambda: c if (c := planner.last()) is not None and c.commit == head2 and c.only_waits else None,
            timeout,
        )
        change_seconds = time.perf_counter() - t0
        change = log.since(mark, last.mark_after)
        change_plans = [c for c in planner.calls if c.commit == head2]
        actions = Counter(executed[done_before:])
    finally:
        if controller is not None:
            controller.stop()
            controller.source.close()
        cluster.stop()

    writes = [r for r in change if r.write]
    owners = Counter(owner(r, app_names) for r in writes)
    allowed = users | {name}
    strays = {o: n for o, n in owners.items() if o not in allowed}
    print(
        f"reconcile_requests: {apps} KDApps, {clusters} KDClusters ({per_app} per used app, "
        f"{1 + workers} pods each), {seeded} objects seeded; client-side request count"
    )
    print("-- counts (machine-independent)")
    print(f"start-up requests: {len(startup)} ({summary(startup)})")
    print(f"first in-sync records (drift baselines, once per cluster): {len(records)} requests ({summary(records)})")
    print(
        f"in-sync reconcile requests: {len(in_sync)}, writes {sum(r.write for r in in_sync)}, "
        f"lists {reads(in_sync)['list']}, gets {reads(in_sync)['get']} (targets: 0 writes, 0 lists, 0 gets)"
    )
    print(
        f"one-app commit: {len(change_plans)} reconciles, actions executed {sum(actions.values())} "
        f"({', '.join(f'{k} {v}' for k, v in sorted(actions.items()))})"
    )
    print(
        f"one-app commit requests: {len(change)}, writes {len(writes)}, lists {reads(change)['list']}, "
        f"gets {reads(change)['get']}, watches {reads(change)['watch']}"
    )
    print(f"  writes by request: {summary(writes)}")
    print(f"  writes by owner: {', '.join(f'{o} {n}' for o, n in sorted(owners.items()))}")
    print(
        f"  clusters of {name}: {len(users)} of {clusters}; clusters written: "
        f"{len([o for o in owners if o in users])}; writes for anything else: {sum(strays.values())}"
        + (f" ({strays})" if strays else "")
    )
    print(f"  reads by request: {summary([r for r in change if not r.write])}")
    print("-- times (this machine)")
    print(f"seed cluster + repo: {seed_seconds:.1f} s; controller start-up to first plan: {startup_seconds:.1f} s")
    print(
        f"in-sync reconcile (kick to plan returned): {sync_seconds * 1000:.0f} ms, of which plan() "
        f"{sync_call.seconds * 1000:.0f} ms"
    )
    print(
        f"one-app commit (poll to last Wait-only plan): {change_seconds:.1f} s; plan() median "
        f"{sorted(c.seconds for c in change_plans)[len(change_plans) // 2] * 1000:.0f} ms"
    )
    ok = not sum(r.write for r in in_sync) and not strays and bool(writes)
    if not ok:
        print("error: targets missed (see above)", file=sys.stderr)
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=1000, help="KDApps (default 1000)")
    parser.add_argument("--clusters", type=int, default=100, help="KDClusters (default 100)")
    parser.add_argument("--per-app", type=int, default=5, help="clusters per used app (default 5)")
    parser.add_argument("--workers", type=int, default=2, help="worker members per cluster (default 2)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for each window")
    parser.add_argument("--small", action="store_true", help="100 apps, 10 clusters")
    args = parser.parse_args(argv)
    if args.small:
        args.apps, args.clusters = 100, 10
    if min(args.apps, args.clusters, args.per_app, args.workers) < 1:
        parser.error("--apps, --clusters, --per-app and --workers must be at least 1")
    if args.clusters > args.apps * args.per_app:
        parser.error(f"{args.clusters} clusters need at least {-(-args.clusters // args.per_app)} apps at {args.per_app} per app")
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="bench-reconcile-") as tmp:
        return run(args.apps, args.clusters, args.per_app, args.workers, Path(tmp), args.timeout)


if __name__ == "__main__":
    sys.exit(main())
