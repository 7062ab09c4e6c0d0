"""Time `report build` the way a user runs it: a fresh process per build, the PDF included.

    python tools/bench_build.py [assignment ...] [--repeat N] [--readme]   (assignment `all`: `report build --all`)

For each assignment, on a copy of the project (so the worklog can be edited) and an empty cache:

* cold: the first build (nothing cached: every part of the PDF laid out, every chart drawn);
* unchanged: the same build again (the parts and charts come from the cache);
* edited: one sentence added to the worklog's answers for the middle version (the body and, if
  the steps table changed, the front matter are laid out again).

Prints each build's wall time and page count, the median per kind, and the machine (cores, CPU,
Python). With ``--readme`` it also writes the table of medians into README.md between the
``<!-- bench_build -->`` markers, with the machine it ran on: the README's figures are never typed.
Not a test: its figures depend on the machine, and a timed test would fail on a busy one.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build(name: str, root: Path, out: Path, cache: Path) -> tuple[float, str]:
    env = {**os.environ, "REPORT_CACHE_DIR": str(cache)}
    t0 = time.perf_counter()
    what = ["--all"] if name == "all" else [name]
    command = [sys.executable, "-m", "reporter.cli", "build", *what, "--root", str(root), "--out", str(out)]
    done = subprocess.run(command,
                          capture_output=True, text=True, check=False, env=env)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"report build {name} failed:\n{done.stdout}{done.stderr}")
    pages = re.findall(r"\((\d+) pages\)", done.stdout)
    return elapsed, "+".join(pages) if pages else "?"


def _edit(worklog: Path, k: int) -> None:
    """Add a sentence to the first answer of the middle version's section."""
    text = worklog.read_text(encoding="utf-8")
    sections = [m.start() for m in re.finditer(r"^## v\d+", text, re.MULTILINE)]
    start = sections[len(sections) // 2]
    answer = text.index("\n\n", text.index("\n### ", start) + 5)
    worklog.write_text(text[:answer] + f" (Edit {k}.)" + text[answer:], encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("assignments", nargs="*", default=["flashattn", "histogram"])
    ap.add_argument("--repeat", type=int, default=2, help="cold, unchanged and edited builds of each kind")
    ap.add_argument("--readme", action="store_true", help="write the table of medians into README.md")
    args = ap.parse_args()
    machine = _machine()
    print(machine)
    medians: dict[str, dict[str, float]] = {}
    pages_of: dict[str, str] = {}
    for name in args.assignments:
        times: dict[str, list[float]] = {"cold": [], "unchanged": [], "edited": []}
        for k in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                root, cache, out = Path(tmp) / "project", Path(tmp) / "cache", Path(tmp) / "out"
                for folder in ("kernels", "logs", "report_templates"):
                    shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
                for kind in times:
                    if kind == "edited":  # `all`: an edit to flashattn's worklog
                        _edit(root / "kernels" / ("flashattn" if name == "all" else name) / "worklog.md", k)
                    elapsed, pages = _build(name, root, out, cache)
                    times[kind].append(elapsed)
                    pages_of[name] = pages
                    print(f"{name} {kind:9s} #{k + 1}: {elapsed:5.2f} s  {pages} pages", flush=True)
        print(f"{name}: median " + ", ".join(f"{kind} {statistics.median(t):.2f} s" for kind, t in times.items()))
        medians[name] = {kind: statistics.median(t) for kind, t in times.items()}
    if args.readme:
        _write_readme(medians, pages_of, machine, args.repeat)
    return 0


def _reference_s() -> float:
    """Seconds this machine takes for a fixed piece of pure Python (best of five): machines of one
    name differ by half as much again, so the table says how fast its machine was."""
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        sum(i * i % 7 for i in range(2_000_000))
        best = min(best, time.perf_counter() - t0)
    return best


def _machine() -> str:
    """'2 cores (Intel Xeon …), Python 3.11.7, reference loop 0.21 s': what the figures were measured on."""
    model = ""
    try:
        model = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                      if ln.startswith("model name")), "")
    except OSError:
        pass
    return (f"{os.cpu_count()} cores" + (f" ({model})" if model else "") + f", Python {sys.version.split()[0]}"
            f" (a reference loop of pure Python in {_reference_s():.2f} s: a faster machine takes less)")


MARK_BEGIN, MARK_END = "<!-- bench_build -->", "<!-- /bench_build -->"
ROWS = (("cold", "cold (empty cache)"), ("unchanged", "unchanged"), ("edited", "one answer edited"))


def _write_readme(medians: dict[str, dict[str, float]], pages: dict[str, str], machine: str, repeat: int) -> None:
    """The table of medians between the README's markers, replacing what was there (atomically)."""
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    if MARK_BEGIN not in text or MARK_END not in text:
        sys.exit(f"{readme}: no {MARK_BEGIN} … {MARK_END} block to write the table into")
    names = list(medians)
    head = "| build | " + " | ".join(f"`--all` ({pages[n]} pages)" if n == "all" else f"{n} ({pages[n]} pages)"
                                     for n in names) + " |"
    lines = [f"Measured by `python tools/bench_build.py {' '.join(names)} --readme` on {machine}, the median of "
             f"{repeat} fresh processes each:", "", head, "|---" * (len(names) + 1) + "|"]
    lines += ["| " + label + " | " + " | ".join(f"{medians[n][kind]:.1f} s" for n in names) + " |" for kind, label in ROWS]
    block = MARK_BEGIN + "\n" + "\n".join(lines) + "\n" + MARK_END
    start, end = text.index(MARK_BEGIN), text.index(MARK_END) + len(MARK_END)
    tmp = readme.with_suffix(".md.tmp")
    tmp.write_text(text[:start] + block + text[end:], encoding="utf-8")
    tmp.replace(readme)


if __name__ == "__main__":
    sys.exit(main())
