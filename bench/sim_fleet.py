#!/usr/bin/env python3
"""A fleet brought up by the embedded cluster's own simulated controllers; seed time and idle CPU of the emulator.

`seed_sim_fleet` creates through the API only what gitops-kd and its user would: the KDApps and
KDClusters as gitops-kd applies them, each role's StatefulSet already carrying gitops-kd's owned
template fields and OnDelete (KubeDirector adopts a StatefulSet of the cluster's labels that the
cluster owns, so no rollout is needed to reach the synced state), and an Idle KDRollout per cluster.
Everything else — the headless and member Services, PVCs, pods, their binding, init containers and
readiness, KubeDirector's cluster status — is done by the simulated KubeDirector, StatefulSet
controller and kubelet. `wait_settled` polls the store until every KDCluster is configured and every
pod Ready.

    .venv/bin/python bench/sim_fleet.py --clusters 100            # seed time, then idle CPU over 20 s
    .venv/bin/python bench/sim_fleet.py --clusters 1000 --idle 300  # idle CPU per minute over 5 min
    .venv/bin/python bench/sim_fleet.py --clusters 500 --idle 30
"""

from __future__ import annotations

import argparse
import logging
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_world import NS, desired_fleet, live_statefulset  # noqa: E402

from gitops_kd.crds import KDROLLOUT_CRD, SOURCE_CRD, load_crd  # noqa: E402
from gitops_kd.diff import app_manifest, cluster_manifest  # noqa: E402
from gitops_kd.source.model import DesiredState  # noqa: E402
from gitops_kd.spec import KDApp, KDCluster  # noqa: E402
from kdsim.cluster import EmbeddedCluster  # noqa: E402
from kubeplumb.rest import RestClient  # noqa: E402

IDLE_WINDOW = 60.0  # seconds: the idle CPU is printed per window (a watch times out and resumes every 300 s)
KD = "kubedirector.hpe.com/v1beta1"
ROLLOUT = "gitops-kd.io/v1alpha1"


def seed_sim_fleet(
    rest: RestClient, desired: DesiredState, progress: Callable[[int], None] | None = None, *, commit: str = "seed"
) -> None:
    """Create the KDApps, then per cluster its KDCluster, pre-patched StatefulSets and Idle KDRollout (recording
    ``commit``: a real one when a controller with its instance record adopts the fleet, else no commit of any repo)."""
    for key, app in sorted(desired.apps.items()):
        rest.create(KD, "kubedirectorapps", NS, app_manifest(app, key))
    for i, (key, cluster) in enumerate(sorted(desired.clusters.items())):
        seed_one(rest, desired.apps[(NS, cluster.app)], cluster, key, commit)
        if progress is not None:
            progress(i + 1)


def seed_one(rest: RestClient, app: KDApp, cluster: KDCluster, key: tuple[str, str], commit: str = "seed") -> None:
    live = rest.create(KD, "kubedirectorclusters", NS, cluster_manifest(cluster, key))
    uid = live["metadata"]["uid"]
    for role in cluster.roles:
        members = role.members_for(app.role(role.id))
        rest.create("apps/v1", "statefulsets", NS, live_statefulset(app, cluster, role.id, members, cluster_uid=uid))
    rest.create(
        ROLLOUT,
        "kdrollouts",
        NS,
        {
            "apiVersion": ROLLOUT,
            "kind": "KDRollout",
            "metadata": {
                "name": cluster.name,
                "namespace": NS,
                "ownerReferences": [
                    {
                        "apiVersion": KD,
                        "kind": "KubeDirectorCluster",
                        "name": cluster.name,
                        "uid": uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {"app": app.name, "targetVersion": app.version, "commit": commit},
        },
    )
    ro = rest.get(ROLLOUT, "kdrollouts", NS, cluster.name)
    generation = ro["metadata"].get("generation", 1)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    base = {"observedGeneration": generation, "lastTransitionTime": now}
    ro["status"] = {
        "observedGeneration": generation,
        "appVersion": app.version,
        "fromVersion": app.version,
        "targetVersion": app.version,
        "commit": commit,
        "phase": "Idle",
        "direction": "adopt",
        "conditions": [
            {**base, "type": "Ready", "status": "True", "reason": "Current", "message": "every pod runs the app version"},
            {**base, "type": "Reconciling", "status": "False", "reason": "Current", "message": ""},
            {**base, "type": "Stalled", "status": "False", "reason": "Current", "message": ""},
        ],
    }
    rest.replace(ROLLOUT, "kdrollouts", NS, cluster.name, ro, subresource="status")


def expected_pods(desired: DesiredState) -> int:
    return sum(r.members_for(desired.apps[(NS, c.app)].role(r.id)) for c in desired.clusters.values() for r in c.roles)


def settled_counts(cluster: EmbeddedCluster) -> tuple[int, int]:
    """(KDClusters configured, pods Ready), read from the store without copying."""

    def configured(key: Any, obj: dict[str, Any]) -> bool:
        return key[1] == "kubedirectorclusters" and (obj.get("status") or {}).get("state") == "configured"

    def ready(key: Any, obj: dict[str, Any]) -> bool:
        return (
            key[1] == "pods"
            and not obj["metadata"].get("deletionTimestamp")
            and any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or ()
            )
        )

    return len(cluster.store.scan(configured)), len(cluster.store.scan(ready))


def wait_settled(
    cluster: EmbeddedCluster, desired: DesiredState, timeout: float, *, report: Callable[[str], None] | None = None
) -> float:
    """Seconds until every KDCluster is configured and every pod Ready; SystemExit on timeout."""
    want_clusters, want_pods = len(desired.clusters), expected_pods(desired)
    start = time.monotonic()
    last = 0.0
    while True:
        clusters, pods = settled_counts(cluster)
        now = time.monotonic()
        if clusters >= want_clusters and pods >= want_pods:
            return now - start
        if now - start > timeout:
            raise SystemExit(
                f"not settled after {timeout:.0f}s: {clusters}/{want_clusters} KDClusters configured, "
                f"{pods}/{want_pods} pods Ready"
            )
        if report is not None and now - last >= 10:
            report(f"  {now - start:5.0f} s: {clusters}/{want_clusters} KDClusters configured, {pods}/{want_pods} pods Ready")
            last = now
        time.sleep(0.5)


def cpu_seconds() -> float:
    """CPU time of this process and its waited-for children (the kubelet's init containers), user + system."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def idle_cpu(seconds: float) -> float:
    """Percent of one core this process used over the next `seconds`."""
    c0, t0 = cpu_seconds(), time.monotonic()
    time.sleep(seconds)
    return 100.0 * (cpu_seconds() - c0) / (time.monotonic() - t0)


def start_cluster(work: Path, *, record: bool = False, controllers: bool = True) -> EmbeddedCluster:
    """The embedded cluster with gitops-kd's KDRollout CRD (and, with ``record``, the GitOpsKDSource CRD `gitops-kd
    run` keeps its instance record in), its simulated controllers started unless ``controllers`` is False."""
    crds = [load_crd(KDROLLOUT_CRD), *([load_crd(SOURCE_CRD)] if record else [])]
    return EmbeddedCluster(work / "cluster", crds=crds, controllers=controllers).start()


def seeded_cluster(work: Path, desired: DesiredState, *, record: bool = False, commit: str = "seed") -> EmbeddedCluster:
    """The embedded cluster holding the seeded fleet, its simulated controllers started only after the seeding:
    started before, KubeDirector could take a KDCluster's roles before the role StatefulSets created right after it
    reached its cache, and create its own beside them (two StatefulSets of one role)."""
    cluster = start_cluster(work, record=record, controllers=False)
    try:
        seed_sim_fleet(RestClient(cluster.api_client()), desired, commit=commit)
        return cluster.start_controllers()
    except BaseException:
        cluster.stop()
        raise


def run(clusters: int, per_app: int, workers: int, idle: float, timeout: float, work: Path) -> int:
    desired = desired_fleet(-(-clusters // per_app), clusters, per_app, workers)
    t0 = time.monotonic()
    cluster = start_cluster(work)
    try:
        seed_sim_fleet(RestClient(cluster.api_client()), desired)
        created = time.monotonic() - t0
        settle = wait_settled(cluster, desired, timeout, report=print)
        total = time.monotonic() - t0
        print(f"sim_fleet: {clusters} KDClusters ({1 + workers} pods each), {len(desired.apps)} KDApps")
        print(
            f"created through the API: {created:.1f} s; settled: {total:.1f} s after start ({settle:.1f} s after the last create)"
        )
        spans = [min(IDLE_WINDOW, idle - start) for start in range(0, int(idle), int(IDLE_WINDOW))]
        windows = [idle_cpu(span) for span in spans]
        mean = sum(w * span for w, span in zip(windows, spans, strict=True)) / sum(spans)
        print(
            f"idle CPU (API server + simulated controllers), % of a core per {IDLE_WINDOW:.0f} s from settled: "
            + ", ".join(f"{w:.1f}" for w in windows)
            + f" (over all {idle:.0f} s: {mean:.1f})"
        )
    finally:
        cluster.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--per-app", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2, help="worker members per cluster (default 2)")
    parser.add_argument("--idle", type=float, default=20.0, help="seconds of the idle CPU window")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="bench-simfleet-") as tmp:
        return run(args.clusters, args.per_app, args.workers, args.idle, args.timeout, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
