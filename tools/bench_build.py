"""Time `report build` the way a user runs it: a fresh process per build, the PDF included.

    python tools/bench_build.py [assignment ...] [--repeat N]

Prints the wall time of each build and the median per assignment, and the machine's core count (the
hand-in goal is under 5 s for flashattn on the 2-core CI machine). Not a test: its figures depend
on the machine, and a timed test would fail on a busy one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("assignments", nargs="*", default=["flashattn", "histogram"])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores; {sys.executable}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.assignments:
            times = []
            for k in range(args.repeat):
                t0 = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "reporter.cli", "build", name, "--root", str(ROOT),
                                       "--out", str(Path(tmp) / name)], capture_output=True, text=True, check=False)
                times.append(time.perf_counter() - t0)
                if done.returncode != 0:
                    print(done.stdout + done.stderr)
                    return done.returncode
                pages = next((line for line in done.stdout.splitlines() if line.startswith("PDF:")), "")
                print(f"{name} #{k + 1}: {times[-1]:.2f} s  {pages.split('(')[-1].rstrip(')') if pages else ''}")
            print(f"{name}: median {statistics.median(times):.2f} s over {len(times)} builds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
