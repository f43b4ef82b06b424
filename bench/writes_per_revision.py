#!/usr/bin/env python3
"""Benchmark: API writes to the KDApp and KDCluster over a first deploy of repo-template plus an idle time.

Starts an embedded cluster (its KubeDirector applies KD's webhook mutations for real), a Git repo from
repo-template and a controller; waits for the KDRollout to say Ready (or gives up after --timeout), then lets
the controller run --idle seconds more with Git unchanged. Prints, from the API server's request counters,
the create / update (PUT) / patch requests to kubedirectorapps and kubedirectorclusters (KubeDirector's own
writes, e.g. its finalizer patch, included) and when Ready came. Target: one write per object per revision.

    .venv/bin/python bench/writes_per_revision.py [--idle 60] [--timeout 90]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gitops_kd.kd.layout import KDAPP_PLURAL, KDCLUSTER_PLURAL  # noqa: E402
from gitops_kd.status import conditions as cond  # noqa: E402
from tests.e2e.harness import E2E  # noqa: E402

VERBS = ("create", "update", "patch")


def _ready(world: E2E) -> bool:
    status = (world.rollout() or {}).get("status") or {}
    return cond.is_true(status.get("conditions"), cond.READY)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--idle", type=float, default=60.0, help="seconds to keep the controller running after Ready")
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for Ready")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        world = E2E(Path(tmp), persist=False)
        try:
            start = time.monotonic()
            world.start_controller()
            ready_after: float | None = None
            while ready_after is None and time.monotonic() - start < args.timeout:
                if _ready(world):
                    ready_after = time.monotonic() - start
                time.sleep(0.2)  # a sampling period of the measurement, not a wait for a condition
            time.sleep(args.idle)  # the idle window being measured
            stats = world.cluster.server.stats
            print(f"first deploy of repo-template, then {args.idle:.0f} s idle (Git unchanged):")
            print(
                f"ready: after {ready_after:.1f} s"
                if ready_after is not None
                else f"ready: never (not within {args.timeout:.0f} s)"
            )
            for plural in (KDAPP_PLURAL, KDCLUSTER_PLURAL):
                counts = ", ".join(f"{verb} {stats.total(verb, plural)}" for verb in VERBS)
                print(f"{plural} updates+patches: {stats.total('update', plural) + stats.total('patch', plural)} ({counts})")
        finally:
            world.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
