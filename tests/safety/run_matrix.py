"""Runs the whole upgrade fault matrix (every kind at every k = 1..N) and prints a Markdown table of results;
`--sharded`: the kinds of 3 sharded replicas (tests/safety/shardmatrix.py: kill, freeze, join, resume, count, mode)."""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tests.safety.matrix import KINDS, Fault, run_sequence
from tests.safety.shardmatrix import KINDS as SHARD_KINDS
from tests.safety.shardmatrix import run_sharded


def _sharded(run_dir: Path, fault: Fault) -> tuple[int, list[str], float]:
    run = run_sharded(run_dir, fault)
    return run.writes, [], 0.0


def _unsharded(run_dir: Path, fault: Fault) -> tuple[int, list[str], float]:
    run = run_sequence(run_dir, fault)
    return run.writes, run.requests, run.cpu


def run_one(tmp: str, fault: Fault, keep: str, sharded: bool = False) -> tuple[Fault, str, float, float]:
    """One run in its own directory (its own cluster, ports, repo and controllers):
    (fault, result, seconds, CPU seconds or 0 when it failed). A failed run's directory (the controllers' logs,
    the repo) is moved under ``keep`` with its whole message in FAILED.txt."""
    started = time.monotonic()
    cpu = 0.0
    run_dir = Path(tmp) / str(fault).replace("@", "-")
    try:
        cpu = (_sharded if sharded else _unsharded)(run_dir, fault)[2]
        return fault, "ok", time.monotonic() - started, cpu
    except AssertionError as exc:
        message = str(exc)
    except Exception as exc:  # noqa: BLE001 - a crashed run is a failed row, the other runs go on
        message = f"{type(exc).__name__}: {exc}"
    kept = Path(keep) / run_dir.name
    shutil.rmtree(kept, ignore_errors=True)
    shutil.move(str(run_dir), kept)
    (kept / "FAILED.txt").write_text(message + "\n")
    return fault, f"FAILED: {message.splitlines()[0][:300] if message else ''} (kept in {kept})", time.monotonic() - started, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--kinds",
        default="",
        help=f"comma-separated subset of {', '.join(KINDS)} (default all); --sharded: of {', '.join(SHARD_KINDS)}",
    )
    parser.add_argument("--sharded", action="store_true", help="3 replicas of `gitops-kd run --shards 6` (shardmatrix.py)")
    parser.add_argument("--first", type=int, default=1, help="first k")
    parser.add_argument("--last", type=int, default=0, help="last k (default: N, counted by a fault-free run)")
    parser.add_argument("--step", type=int, default=1, help="every STEP-th k only (a sparse sweep)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once, each in its own worker process")
    parser.add_argument(
        "--requests", action="store_true", help="list the fault-free run's writes and execs (k: verb resource name) and stop"
    )
    parser.add_argument(
        "--keep",
        default="fault-matrix-failed",
        help="folder where a failed run's directory (logs, repo) and whole message are kept",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fault-matrix-") as tmp:
        began = time.monotonic()
        writes, requests, cpu = (_sharded if args.sharded else _unsharded)(Path(tmp) / "none", Fault("none", 0))
        last = args.last or writes
        print(
            f"N = {writes} writes and execs of the controller (sharded: of shard 0's holder) in the fault-free "
            f"sequence ({time.monotonic() - began:.1f}s, {cpu:.1f} CPU s)",
            flush=True,
        )
        if args.requests:
            for k, request in enumerate(requests, 1):
                print(f"{k:4} {request}")
            return 0
        kinds = args.kinds.split(",") if args.kinds else list(SHARD_KINDS if args.sharded else KINDS)
        faults = [Fault(kind, k) for kind in kinds for k in range(args.first, last + 1, max(1, args.step))]
        failures: list[str] = []
        started = time.monotonic()
        # spawn: a fresh interpreter per worker (the parent's embedded-cluster threads are not forked)
        with ProcessPoolExecutor(max(1, args.jobs), mp_context=multiprocessing.get_context("spawn")) as pool:
            keep = str(Path(args.keep).resolve())
            Path(keep).mkdir(parents=True, exist_ok=True)
            runs = pool.map(run_one, [tmp] * len(faults), faults, [keep] * len(faults), [args.sharded] * len(faults))
            for fault, result, seconds, cpu in runs:
                if result != "ok":
                    failures.append(f"{fault}: {result}")
                print(f"| {fault.kind} | {fault.k} | {result} | {seconds:.1f}s | {cpu:.1f} CPU s |", flush=True)
        print(f"\n{len(faults)} runs in {time.monotonic() - started:.0f}s, {len(failures)} failed", flush=True)
        for line in failures:
            print(line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
