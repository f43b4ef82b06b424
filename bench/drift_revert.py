#!/usr/bin/env python3
"""Benchmark: time from an out-of-band edit of a StatefulSet's image to the revert seen through a watch.

Starts an embedded cluster, a Git repo from repo-template and a drift-guarded controller (the wiring of
docs/drift.md), waits for hello-dev to settle, then N times edits the worker StatefulSet's app image
(client strategic-merge patch, or `kubectl set image` with --kubectl) and measures, on a watch of that
StatefulSet, the time until a MODIFIED event shows the Git image again. Prints median / p90 / max beside
the Git poll interval, which is what a poll-only controller would need on average (interval / 2).

    .venv/bin/python bench/drift_revert.py --edits 20 [--kubectl] [--poll-interval 30]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gitops_kd.controller import Options, build_manager  # noqa: E402
from gitops_kd.controller.options import LeaseOptions  # noqa: E402
from gitops_kd.crds import KDROLLOUT_CRD, load_crd  # noqa: E402
from gitops_kd.source import GitSource  # noqa: E402
from kdsim import images  # noqa: E402
from kdsim.cluster import EmbeddedCluster  # noqa: E402
from kdsim.images import ImageBehavior  # noqa: E402
from kubeplumb.rest import RestClient  # noqa: E402

NS = "default"
IMAGE = "gitops-kd/hello:1.0.0"
SELECTOR = "kubedirector.hpe.com/kdcluster=hello-dev,kubedirector.hpe.com/role=worker"


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "b@example.com",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "b@example.com",
            "PATH": "/usr/bin:/bin:/usr/local/bin",
            "HOME": str(repo),
        },
    )


def wait(what: str, probe, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def app_image(sts: dict) -> str:
    return next(c["image"] for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "app")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edits", type=int, default=20, help="number of edits to time (default 20)")
    ap.add_argument("--kubectl", action="store_true", help="edit with `kubectl set image` instead of a client patch")
    ap.add_argument("--poll-interval", type=float, default=30.0, help="controller Git poll interval (default 30s)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)  # the drift log lines would drown the result
    if args.kubectl and shutil.which("kubectl") is None:
        raise SystemExit("--kubectl: kubectl is not on PATH")
    tmp = Path(tempfile.mkdtemp(prefix="gitops-kd-bench-"))
    cluster = EmbeddedCluster(tmp / "cluster", controllers=True, crds=[load_crd(KDROLLOUT_CRD)]).start()
    controller = None
    try:
        images.store_for(cluster).add(IMAGE, {"/etc/hello/version": "1.0.0\n"}, behavior=ImageBehavior(ready_delay_seconds=0.1))
        repo = tmp / "repo"
        shutil.copytree(ROOT / "repo-template", repo)
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "hello 1.0.0")
        rest = RestClient(cluster.api_client())
        options = Options(
            namespace=NS, scope=NS, poll_interval=args.poll_interval, record=False, lease=LeaseOptions(elect=False)
        )  # as `gitops-kd run`: the drift stage and its watcher
        controller = build_manager(
            options, api_client=cluster.api_client(), source=GitSource(f"file://{repo}", "main", tmp / "cache")
        )
        assert controller.drift is not None and controller.drift.watcher is not None
        guard, watcher = controller.drift.guard, controller.drift.watcher
        controller.start()
        wait("hello-dev in sync (drift baseline)", lambda: guard.synced_commit((NS, "hello-dev")) is not None)
        [sts] = rest.list("apps/v1", "statefulsets", NS, label_selector=SELECTOR)["items"]
        name = sts["metadata"]["name"]
        samples: list[float] = []
        for i in range(args.edits):
            current = rest.get("apps/v1", "statefulsets", NS, name)
            stream = rest.watch(
                "apps/v1",
                "statefulsets",
                NS,
                resource_version=current["metadata"]["resourceVersion"],
                label_selector=SELECTOR,
                timeout_seconds=60,
            )
            edited = False
            start = time.monotonic()
            if args.kubectl:
                subprocess.run(
                    [
                        "kubectl",
                        "--kubeconfig",
                        str(cluster.kubeconfig),
                        "set",
                        "image",
                        f"statefulset/{name}",
                        f"app=evil/hello:{i}",
                    ],
                    check=True,
                    capture_output=True,
                )
            else:
                rest.patch(
                    "apps/v1",
                    "statefulsets",
                    NS,
                    name,
                    {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": f"evil/hello:{i}"}]}}}},
                    patch_type="strategic",
                )
            for event in stream:
                obj = event.get("object") or {}
                if event.get("type") != "MODIFIED" or (obj.get("metadata") or {}).get("name") != name:
                    continue
                image = app_image(obj)
                if image != IMAGE:
                    edited = True
                elif edited:
                    samples.append(time.monotonic() - start)
                    break
            stream.close()
            wait("controller settled", lambda: controller.last_plan is not None and controller.last_plan.empty, 30)
        if len(samples) != args.edits:
            raise SystemExit(f"only {len(samples)} of {args.edits} reverts were observed")
        how = "kubectl set image" if args.kubectl else "client strategic-merge patch"
        print(f"drift revert latency over {len(samples)} edits ({how}), edit sent -> revert seen on a watch:")
        print(f"  median {statistics.median(samples) * 1000:7.1f} ms")
        print(f"  p90    {percentile(samples, 90) * 1000:7.1f} ms")
        print(f"  max    {max(samples) * 1000:7.1f} ms")
        print(
            f"  Git poll interval {args.poll_interval:g} s (a poll-only revert would wait ~{args.poll_interval / 2:g} s "
            f"on average)"
        )
        print(f"  watcher triggers: {watcher.triggered}, drift checks: {guard.checks}")
        return 0
    finally:
        if controller is not None:
            controller.close()
            controller.source.close()
        cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
