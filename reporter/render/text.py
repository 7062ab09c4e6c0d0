"""Text for a terminal or a fixed-width block: the GPU MODE leaderboard block, the device's
'Running on:' lines, the CS149 metric block of a profile, and the tables ``report run`` and
``report sweep`` print when they finish; and the terminal's side of the harness's events
(:class:`TerminalEvents`: those, the lines the harness says, its steps and progress bars).
Nothing here measures; everything reads records or what the harness says.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..analysis.diagnose import timing_crosscheck
from ..analysis.metrics import format_value, value
from ..analysis.sweep import config_name, decision, note, standings
from ..ncu_metrics import CS149_BLOCK, DURATION
from ..records import DeviceInfo, Profile, Run, Sweep, TimingStats
from .tables import probes_table


def leaderboard_block(stats: TimingStats, *, title: str, case: dict, device_lines: list[str],
                      symbols: bool = True) -> str:
    """The GPU MODE leaderboard text: the case, ⏱ mean ± err, ⚡ fastest 🐌 slowest, device.
    ``symbols=False`` writes the words instead (for PDFs, whose fonts often lack the emoji)."""
    mean_s, fast_s, slow_s = ("⏱", "⚡", "🐌") if symbols else ("mean", "fastest", "slowest")
    def fmt(ms: float) -> str:
        return f"{ms * 1e3:.1f} µs" if ms < 1 else f"{ms:.3f} ms" if ms < 100 else f"{ms:.1f} ms"

    case_line = "; ".join(f"{k}: {v}" for k, v in case.items())
    lines = [
        f"{title}",
        case_line,
        f" {mean_s} {fmt(stats.mean_ms)} ± {fmt(stats.stderr_ms)}   (median {fmt(stats.median_ms)}, n={stats.n})",
        f" {fast_s} {fmt(stats.min_ms)} {slow_s} {fmt(stats.max_ms)}",
        "",
        "Running on:",
        *[f"* {line}" for line in device_lines],
    ]
    return "\n".join(lines)


def device_lines(d: DeviceInfo) -> list[str]:
    """The leaderboard's 'Running on:' block."""
    return [
        f"GPU: {d.name} (sm_{d.compute_capability.replace('.', '')}, {d.sm_count} SMs, "
        f"{d.l2_bytes / 2**20:.0f} MiB L2, {d.memory_bytes / 2**30:.0f} GiB)",
        f"CPU: {d.cpu}",
        f"Driver: {d.driver_version}, CUDA {d.cuda_version}",
        f"Torch: {d.torch_version}; Triton: {d.triton_version}; CuPy: {d.cupy_version}",
        f"Platform: {d.platform}",
    ]


def short_kernel_name(name: str, width: int = 90) -> str:
    """A demangled C++ signature cut to something that fits a line; Triton names pass as is."""
    base = re.sub(r"\(.*\)$", "", name.strip()) or name.strip()
    base = base.removeprefix("void ")
    return base if len(base) <= width else base[: width - 1] + "…"


def format_metric_block(profile: Profile | None, max_kernels: int | None = None) -> str:
    """The profile printed the way the CS149 course prints it: ``Kernel N: name`` then
    ``Label : value`` for each metric of :data:`CS149_BLOCK`. With ``max_kernels``, only the
    longest-running kernels are printed (in launch order) and the rest counted."""
    if profile is None:
        return "No profile was taken (run `report run ... --profile`)."
    if profile.status != "ok":
        return f"Profile {profile.status}: {profile.reason or 'no reason recorded'}"
    if not profile.kernels:
        return "The profile holds no kernels."
    width = max(len(label) for label, _ in CS149_BLOCK)
    kernels = list(profile.kernels)
    if max_kernels is not None and len(kernels) > max_kernels:
        longest = {id(k) for k in sorted(kernels, key=lambda k: -(value(k, DURATION) or 0.0))[:max_kernels]}
        kernels = [k for k in kernels if id(k) in longest]
    lines: list[str] = []
    for k in kernels:
        lines.append(f"Kernel {k.index}: {short_kernel_name(k.name)}")
        for label, name in CS149_BLOCK:
            m = k.metrics.get(name)
            shown = format_value(m.value, m.unit) if m is not None else "n/a"
            lines.append(f"  {label:<{width}} : {shown}")
        lines.append("")
    if len(kernels) < len(profile.kernels):
        lines.append(f"… and {len(profile.kernels) - len(kernels)} shorter kernels (all are in the record)")
    return "\n".join(lines).rstrip() + "\n"


def summary_table(runs: list[Run], title: str = "runs written") -> Table:
    t = Table(title=title)
    for col in ("version", "case", "check", "mean ms", "± stderr", "median ms", "n", "TFLOP/s", "GB/s", "% of roof",
                "best peer ms"):
        t.add_column(col, justify="right" if col not in ("version", "case", "check") else "left")
    for r in runs:
        best_peer = min((p.timing.mean_ms for p in r.peers if p.timing), default=None)
        t.add_row(
            r.version, r.case_name,
            "[green]pass[/green]" if r.check.passed and not r.error else "[red]FAIL[/red]",
            f"{r.timing.mean_ms:.4f}" if r.timing else "-", f"{r.timing.stderr_ms:.4f}" if r.timing else "-",
            f"{r.timing.median_ms:.4f}" if r.timing else "-",
            str(r.timing.n) if r.timing else "-",
            f"{r.derived.tflops:.1f}" if r.derived and r.derived.tflops is not None else "—",
            f"{r.derived.gbps:.0f}" if r.derived else "-",
            f"{100 * r.derived.fraction_of_ceiling:.1f}" if r.derived and r.derived.fraction_of_ceiling else "-",
            f"{best_peer:.4f}" if best_peer else "-",
        )
    return t


def failure_lines(runs: list[Run]) -> list[str]:
    """One line per run that failed, under the table of runs: the version, the case and the first
    line of why (the record keeps all of it, ``report show`` prints it)."""
    return [f"[red]FAIL[/red] {escape(r.version)} on {escape(r.case_name)}: "
            f"{escape((r.error or r.check.message).splitlines()[0] if (r.error or r.check.message) else 'failed')}"
            for r in runs if not r.check.passed or r.error]


def sweep_table(s: Sweep) -> Table:
    """The configurations of a sweep, fastest first, each against the fastest."""
    t = Table(title=f"sweep of {s.version} on {s.case_name} ({s.timing_order})")
    t.add_column("config")
    t.add_column("mean ms", justify="right")
    t.add_column("against the fastest")
    for st in sorted(standings(s), key=lambda st: st.point.timing.mean_ms if st.point.timing else float("inf")):
        t.add_row(config_name(st.point.config), f"{st.point.timing.mean_ms:.3f}" if st.point.timing else "-",
                  note(st))
    return t


def sweep_decision(s: Sweep) -> str:
    """The sentence under the sweep table: which configuration the version keeps, and why."""
    return decision(s) + "."


#: kernels whose metric block is printed after profiling; a many-kernel version keeps all in its record
BLOCK_KERNELS = 8


class QuietProgress(Progress):
    """A progress display that draws only when asked, between samples.

    Rich's default redraws from a background thread ten times a second; the redraw holds the
    GIL, and when it lands inside a timed call whose host path outlasts the L2 clear queued
    before it (a library call with a heavy dispatch, say), the launch waits and the sample grows.
    ``update`` redraws at most every ``interval_s``, from the harness's own thread, after the
    sample's end event was waited on. (With this and the collector kept out of the rounds,
    cuDNN's test_small mean in our harness went from 87 to 81 µs; the course's harness measures
    64–70 µs, and the rest of that gap is not explained yet.)
    """

    def __init__(self, *columns: Any, interval_s: float = 0.25, **kwargs: Any) -> None:
        columns = columns or (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TimeElapsedColumn())
        super().__init__(*columns, auto_refresh=False, **kwargs)
        self._interval_s = interval_s
        self._drawn = 0.0

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        super().update(*args, **kwargs)
        now = time.perf_counter()
        if now - self._drawn >= self._interval_s:
            self._drawn = now
            self.refresh()


#: how each level of a line the harness says is shown (rich markup around the escaped text)
LEVEL_STYLE = {"step": "dim", "info": "", "warning": "yellow", "error": "red"}


class TerminalEvents:
    """The harness's events (:class:`reporter.harness.events.Events`) printed on a console: each
    run's leaderboard block (``blocks``), each profile's metric block and how its duration agrees
    with the run's timing, the table of runs, a sweep's table and decision; what the harness says
    (a version that raised, a lost worker, the ceilings measured), its steps (a spinner) and its
    progress bars (:class:`QuietProgress`)."""

    def __init__(self, console: Console, *, blocks: bool = True, written: bool = True) -> None:
        self.console, self.blocks, self.written = console, blocks, written

    def say(self, text: str, level: str = "info", detail: str = "") -> None:
        style = LEVEL_STYLE.get(level, "")
        self.console.print(f"[{style}]{escape(text)}[/{style}]" if style else text, markup=bool(style),
                           highlight=False)
        if detail:
            self.console.print(detail, markup=False, highlight=False)

    def output(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, style="dim")

    @contextmanager
    def status(self, text: str) -> Iterator[Callable[[str], None]]:
        with self.console.status(escape(text)) as shown:
            yield lambda new: shown.update(escape(new))

    @contextmanager
    def progress(self) -> Iterator[QuietProgress]:
        with QuietProgress(console=self.console, transient=False) as bars:
            yield bars

    def run_written(self, run: Run, device: DeviceInfo) -> None:
        if self.blocks and run.timing:
            self.console.print(leaderboard_block(run.timing, title=f"{run.assignment} {run.version}", case=run.case,
                                                 device_lines=device_lines(device)))

    def profiled(self, run: Run) -> None:
        prof = run.profile
        if prof is None:
            return
        where = f"{run.version} · {run.case_name}"
        if prof.status != "ok":
            self.console.print(f"[yellow]profile {prof.status}[/yellow] {where}: {prof.reason}", highlight=False)
            return
        *_, agreement = timing_crosscheck(run)
        reason = f"{prof.reason}. {agreement}" if agreement else prof.reason
        self.console.print(f"[green]profile[/green] {where}: {reason}", highlight=False)
        self.console.print(format_metric_block(prof, max_kernels=BLOCK_KERNELS), highlight=False, markup=False)

    def runs_done(self, runs: list[Run]) -> None:
        self.console.print(summary_table(runs, "runs written" if self.written else "runs (quick: not written)"))
        for line in failure_lines(runs):  # under the table, where a reason has the width it needs
            self.console.print(line, highlight=False)
        shown: set[str] = set()
        for r in runs:  # every run of a case holds the same probes: one table per case
            if r.probes and r.case_name not in shown:
                shown.add(r.case_name)
                self.console.print(probes_table(r.probes, r.case_name))

    def sweep_written(self, sweep: Sweep) -> None:
        self.console.print(sweep_table(sweep))
        self.console.print(sweep_decision(sweep), highlight=False)
