"""Runs the whole upgrade fault matrix (every kind at every k = 1..N) and prints a Markdown table of results."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from tests.safety.matrix import KINDS, Fault, run_sequence


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated subset of {', '.join(KINDS)}")
    parser.add_argument("--first", type=int, default=1, help="first k")
    parser.add_argument("--last", type=int, default=0, help="last k (default: N, counted by a fault-free run)")
    parser.add_argument("--step", type=int, default=1, help="every STEP-th k only (a sparse sweep)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fault-matrix-") as tmp:
        base = run_sequence(Path(tmp) / "none", Fault("none", 0))
        last = args.last or base.writes
        print(f"N = {base.writes} writes and execs of the controller in the fault-free sequence", flush=True)
        failures: list[str] = []
        rows = 0
        started = time.monotonic()
        for kind in args.kinds.split(","):
            for k in range(args.first, last + 1, max(1, args.step)):
                fault = Fault(kind, k)
                try:
                    run_sequence(Path(tmp) / str(fault).replace("@", "-"), fault)
                    result = "ok"
                except AssertionError as exc:
                    result = f"FAILED: {str(exc).splitlines()[0][:300]}"
                    failures.append(f"{fault}: {result}")
                rows += 1
                print(f"| {kind} | {k} | {result} |", flush=True)
        print(f"\n{rows} runs in {time.monotonic() - started:.0f}s, {len(failures)} failed", flush=True)
        for line in failures:
            print(line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
