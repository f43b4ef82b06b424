#!/usr/bin/env python3
"""Benchmark: one Git poll after a one-file change, incremental (parse cache) vs a full re-read.

Builds a bare repo of N KDApp files and M commits with `git fast-import`, primes two GitSources on
its head (both mark it applied, as the controller does), then R times commits a one-app change and
polls both: source A keeps its per-(path, blob) parse cache (the incremental path); source B has its
cache emptied before the poll (`cache.retain(())`, what a restarted controller does), so it re-reads
every manifest of the applied commit and the new head. Prints the files parsed by each, the ratios,
then the times (median of R). Target: the full poll takes at least 20x the incremental one.

    .venv/bin/python bench/git_poll.py                 # 1,000 apps, 5,000 commits, 3 repeats
    .venv/bin/python bench/git_poll.py --small         # 100 apps, 500 commits
    .venv/bin/python bench/git_poll.py --apps 5 --commits 10 --repeat 1
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_repo import build_repo, change_one_app, commit_count  # noqa: E402

from gitops_kd.source import GitSource, PollResult  # noqa: E402

TARGET_RATIO = 20.0


@dataclass(frozen=True)
class PollSample:
    """One measured poll: files parsed during it and its wall-clock time."""

    parsed: int
    seconds: float
    apps_changed: int


def timed_poll(source: GitSource, *, clear_cache: bool) -> PollSample:
    """Poll once; with clear_cache the parse cache is emptied first (a full re-read)."""
    if clear_cache:
        source.cache.retain(())
    before = source.parse_count
    start = time.perf_counter()
    result: PollResult = source.poll()
    seconds = time.perf_counter() - start
    if not (result.accepted and result.changed):
        raise SystemExit(f"poll of {result.commit} was not accepted as a change: {result.errors}")
    source.mark_applied(result.commit)
    return PollSample(source.parse_count - before, seconds, len(result.changes.apps_changed))


def run(apps: int, commits: int, repeat: int, work: Path) -> int:
    start = time.perf_counter()
    origin = build_repo(work / "origin.git", apps, commits)
    build_seconds = time.perf_counter() - start
    url = origin.as_uri()
    incremental = GitSource(url, cache_dir=work / "inc")
    full = GitSource(url, cache_dir=work / "full")
    try:
        start = time.perf_counter()
        cold = timed_poll(incremental, clear_cache=False)
        cold_seconds = time.perf_counter() - start
        timed_poll(full, clear_cache=False)
        inc_samples: list[PollSample] = []
        full_samples: list[PollSample] = []
        for r in range(repeat):
            change_one_app(origin, (r * 7) % apps, f"9.{r}.0")
            inc_samples.append(timed_poll(incremental, clear_cache=False))
            full_samples.append(timed_poll(full, clear_cache=True))
        total_commits = commit_count(origin)
    finally:
        incremental.close()
        full.close()

    inc_parsed = max(s.parsed for s in inc_samples)
    full_parsed = min(s.parsed for s in full_samples)
    inc_t = statistics.median(s.seconds for s in inc_samples)
    full_t = statistics.median(s.seconds for s in full_samples)
    ratio = full_t / inc_t if inc_t > 0 else float("inf")
    print(f"git_poll: {apps} KDApp files, {commits} commits, then {repeat} one-file change(s) measured")
    print("-- counts (machine-independent)")
    print(f"history:                                     {commits} commits (+{total_commits - commits} measured)")
    print(f"files parsed, cold first poll:               {cold.parsed}")
    print(f"files parsed, incremental poll:              {inc_parsed}")
    print(f"files parsed, full re-read poll:             {full_parsed}  (applied commit + new head)")
    print(f"apps in the change set (both):               {inc_samples[0].apps_changed}")
    print(f"parse ratio full / incremental:              {full_parsed / max(inc_parsed, 1):.0f}x")
    print("-- times (this machine)")
    print(f"build repo (fast-import):                    {build_seconds:.2f} s")
    print(f"cold first poll (clone + parse all):         {cold_seconds:.2f} s")
    print(f"incremental poll (median of {repeat}):            {inc_t * 1000:.1f} ms")
    print(f"full re-read poll (median of {repeat}):           {full_t * 1000:.1f} ms")
    verdict = "met" if ratio >= TARGET_RATIO else "MISSED"
    print(f"time ratio full / incremental:               {ratio:.1f}x  (target >= {TARGET_RATIO:.0f}x: {verdict})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=1000, help="KDApp files in the repo (default 1000)")
    parser.add_argument("--commits", type=int, default=5000, help="commits in the history (default 5000)")
    parser.add_argument("--repeat", type=int, default=3, help="one-file changes measured (default 3)")
    parser.add_argument("--small", action="store_true", help="100 apps, 500 commits")
    args = parser.parse_args(argv)
    if args.small:
        args.apps, args.commits = 100, 500
    if args.apps < 1 or args.commits < 1 or args.repeat < 1:
        parser.error("--apps, --commits and --repeat must be at least 1")
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="bench-git-poll-") as tmp:
        return run(args.apps, args.commits, args.repeat, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
