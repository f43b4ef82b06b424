#!/usr/bin/env python3
"""Benchmark: first deploy and the 1.0.0 -> 2.0.0 upgrade of repo-template on each test backend, side by side.

For each backend of --backends (embedded; real: kube-apiserver v1.20.2 with the simulated node and KubeDirector;
kd, kd-upgrade: the same with the real KubeDirector, stock or its live-app-upgrade branch), brings it up as the
test suite does (tests/e2e/harness.E2E; tests/real/session.backend_up + world_on, the session fixtures' own
helpers), starts the controller on a repo made from repo-template with no app or cluster in it, then measures:

- first deploy: from the commit of apps/hello.yaml (1.0.0) and clusters/hello-dev.yaml to the KDRollout Ready at
  1.0.0 with every member pod Ready on the 1.0.0 image;
- upgrade: from the commit of examples/hello-2.0.0.yaml as apps/hello.yaml (role order, gate, hook, data rules,
  Service port change) to Ready at 2.0.0 with every member pod Ready on the 2.0.0 image.

Each backend is brought up once and measured --runs times, each run in a new world (a new namespace of the same
control plane; a new embedded cluster). Prints the medians side by side with their ratios to embedded (measured
in the same run). The real backends need
scripts/realk8s and scripts/realkd's caches and fixed ports: run it under the shared lock.

    flock /tmp/kd-ports.lock .venv/bin/python bench/backends.py [--backends embedded,real,kd,kd-upgrade] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gitops_kd.status import conditions as cond  # noqa: E402
from gitops_kd.testing import pod_ready, wait_for  # noqa: E402
from tests.conftest import BACKENDS  # noqa: E402
from tests.e2e.harness import E2E, TEMPLATE  # noqa: E402

APP, CLUSTER, NEXT = "apps/hello.yaml", "clusters/hello-dev.yaml", "examples/hello-2.0.0.yaml"
APP_CONTAINER = "app"  # the member pod's container that runs the app image (tests/e2e/harness.E2E.exec)


@contextmanager
def embedded_world(folder: Path) -> Iterator[E2E]:
    world = E2E(folder, persist=False)
    try:
        yield world
    finally:
        world.close()


@contextmanager
def backend_of(backend: str, folder: Path) -> Iterator[Callable[[Path], AbstractContextManager[E2E]]]:
    """``backend`` brought up; yields how to open a new e2e world on it (a new namespace of the same control plane
    on the real backends, a new embedded cluster on embedded)."""
    if backend == "embedded":
        yield embedded_world
        return
    from tests.real.session import backend_up, world_on

    with backend_up(backend, folder) as (cp, kubeconfig):
        yield lambda tmp: world_on(cp, kubeconfig, tmp, backend)


def _template(rel: str) -> dict[str, Any]:
    return yaml.safe_load((TEMPLATE / rel).read_text())


def running(world: E2E, app_file: str, timeout: float) -> None:
    """Until hello-dev's KDRollout is Ready at the version of ``app_file`` (a KDApp of repo-template) and each member
    pod Git asks for is Ready on that version's image."""
    spec = _template(app_file)["spec"]
    version, image = spec["version"], spec["defaultImageRepoTag"]
    members = sum(int(r["members"]) for r in _template(CLUSTER)["spec"]["roles"])

    def probe() -> bool:
        status = (world.rollout() or {}).get("status") or {}
        if not cond.is_true(status.get("conditions"), cond.READY) or status.get("appVersion") != version:
            return False
        pods = world.pods()
        return len(pods) == members and all(
            pod_ready(p) and any(c["name"] == APP_CONTAINER and c["image"] == image for c in p["spec"]["containers"])
            for p in pods
        )

    wait_for(f"hello-dev Ready at {version}, {members} pods Ready on {image}", probe, timeout)


def measure(world: E2E, timeout: float) -> tuple[float, float]:
    """(first deploy, upgrade) seconds, each from its commit to every member running the version."""
    world.commit({APP: None, CLUSTER: None}, "nothing yet")
    controller = world.start_controller()
    wait_for("the controller's first plan", lambda: controller.last_plan is not None, timeout)
    start = time.monotonic()
    world.commit({APP: world.template(APP), CLUSTER: world.template(CLUSTER)}, "hello 1.0.0")
    running(world, APP, timeout)
    first = time.monotonic() - start
    world.wait_settled(timeout)
    start = time.monotonic()
    world.commit({APP: world.template(NEXT)}, "hello 2.0.0")
    running(world, NEXT, timeout)
    return first, time.monotonic() - start


def _ratio(value: float, base: float | None) -> str:
    return f"({value / base:.1f}x)" if base else ""


def _median(values: list[float]) -> str:
    spread = f" [{min(values):.1f}-{max(values):.1f}]" if len(values) > 1 else ""
    return f"{statistics.median(values):.1f} s{spread}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default=",".join(BACKENDS), help=f"comma-separated, of {', '.join(BACKENDS)} (default: all)")
    ap.add_argument("--runs", type=int, default=3, help="deploy + upgrade runs per backend, each in a new world")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for each deploy or upgrade")
    args = ap.parse_args()
    backends = [b for b in args.backends.split(",") if b]
    unknown = sorted(set(backends) - set(BACKENDS))
    if unknown:
        ap.error(f"unknown backend(s) {', '.join(unknown)}: choose from {', '.join(BACKENDS)}")
    rows: dict[str, tuple[float, list[float], list[float]]] = {}  # backend: (up to the first world, runs...)
    up = 0.0
    for backend in backends:
        with tempfile.TemporaryDirectory(prefix=f"bench-{backend}-") as tmp:
            start = time.monotonic()
            with backend_of(backend, Path(tmp) / "backend") as new_world:
                firsts, upgrades = [], []
                for run in range(args.runs):
                    with new_world(Path(tmp) / f"world-{run}") as world:
                        up = time.monotonic() - start if run == 0 else up
                        first, upgrade = measure(world, args.timeout)
                    firsts.append(first)
                    upgrades.append(upgrade)
                    print(f"{backend} run {run + 1}: first deploy {first:.1f} s, upgrade {upgrade:.1f} s", flush=True)
        rows[backend] = (up, firsts, upgrades)
    base = rows.get("embedded")
    print(
        f"\nrepo-template's hello-dev (3 members), commit -> KDRollout Ready with every member pod Ready on the "
        f"image; median of {args.runs} [min-max], ratio of medians to embedded, measured in this run:"
    )
    print(f"{'backend':<12}{'backend up':>12}{'first deploy':>30}{'upgrade 1.0.0 -> 2.0.0':>32}")
    for backend, (up, firsts, upgrades) in rows.items():
        first, upgrade = statistics.median(firsts), statistics.median(upgrades)
        print(
            f"{backend:<12}{up:>10.1f} s{_median(firsts):>21} {_ratio(first, base and statistics.median(base[1])):>8}"
            f"{_median(upgrades):>23} {_ratio(upgrade, base and statistics.median(base[2])):>8}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
