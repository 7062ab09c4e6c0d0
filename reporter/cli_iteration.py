"""`report new | list | show | diff | history`: the iteration workflow's typer commands.

Thin: names are resolved and diffs computed in :mod:`reporter.iteration` and
:mod:`reporter.analysis.diff`; this module only parses options and draws rich output.
Registered on the main app by :func:`register`. Nothing here imports scipy, matplotlib or
torch at import time (the chart of `history --chart` imports matplotlib when asked).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .assignments import AssignmentError, find_repo_root
from .store import RecordError

if TYPE_CHECKING:
    from .analysis.diff import FigureDelta, RunDiff
    from .analysis.listing import ListRow
    from .records import Run

console = Console()
err = Console(stderr=True, soft_wrap=True)

RootOpt = Annotated[Path | None, typer.Option(
    "--root", help="project root (holds kernels/ and logs/); default: found upwards from here")]
LogsOpt = Annotated[Path | None, typer.Option("--logs", help="records folder; default: <root>/logs")]
CaseOpt = Annotated[str | None, typer.Option("--case", "-c", help="case name; default the assignment's BENCHMARK_CASE")]
GpuOpt = Annotated[str | None, typer.Option(
    "--gpu", help="GPU label of the runs to use (e.g. h100); default the newest")]
GpuFilterOpt = Annotated[str | None, typer.Option("--gpu", help="only runs on this GPU label (e.g. h100)")]

_VERDICT_STYLE = {"faster": "bold green", "slower": "bold red", "same": "bold"}


class DiffFormat(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"
    html = "html"


def _paths(root: Path | None, logs: Path | None) -> tuple[Path, Path, Path]:
    r = (root or find_repo_root()).resolve()
    return r, r / "kernels", (logs or r / "logs").resolve()


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/bold red] {message}", highlight=False, markup=True)
    raise typer.Exit(code)


def _user_errors() -> tuple[type[Exception], ...]:
    from .lookup import IterationError

    return (IterationError, AssignmentError, RecordError)


# --------------------------------------------------------------------------- report new


def new_cmd(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/ (created with a template if missing)")],
    version: Annotated[str, typer.Argument(help="the new version's name, vNN_slug, e.g. v04_vectorized_loads")],
    from_version: Annotated[str | None, typer.Option(
        "--from", help="version to copy (name or vNN); default the highest-numbered")] = None,
    from_task: Annotated[Path | None, typer.Option(
        "--from-task", metavar="FOLDER",
        help="a new assignment over a course problem folder in the CS149 / GPU MODE format (reference.py, "
             "task.py, test_cases/test.txt), loaded from there at run time: its inputs, cases and check")] = None,
    benchmark_line: Annotated[int | None, typer.Option(
        "--benchmark-line", metavar="N", help="with --from-task: the 0-based line of the test file that is the "
                                             "benchmark case (default the last)")] = None,
    root: RootOpt = None,
) -> None:
    """Scaffold the next version from the previous one (or a new assignment folder) and its worklog section."""
    from .scaffold import PLACEHOLDER, plan_new, write_plan

    repo, kernels, _ = _paths(root, None)
    if benchmark_line is not None and from_task is None:
        _fail("--benchmark-line goes with --from-task")
    try:
        plan = plan_new(kernels, assignment, version, from_version, from_task, benchmark_line)
        written = write_plan(plan)
    except _user_errors() as e:
        _fail(str(e))
        return
    if plan.new_assignment and from_task is not None:
        console.print(f"new assignment [bold]{assignment}[/bold] in {kernels / assignment}, over the course "
                      f"problem in {from_task} (loaded from there at run time)", highlight=False)
    elif plan.new_assignment:
        console.print(f"new assignment [bold]{assignment}[/bold] in {kernels / assignment}")
    elif plan.source_version:
        console.print(f"[bold]{version}[/bold]: a copy of {plan.source_version} with a fresh docstring")
    for path in written:
        verb = "created" if any(f.path == path and f.create for f in plan.files) else "updated"
        console.print(f"  {verb} {_rel(path, repo)}", highlight=False)
    console.print(f"Edit every part marked [bold]{PLACEHOLDER}[/bold]: the docstring says how the code is "
                  f"structured, the worklog section why this version exists. Then: report run {assignment} "
                  f"--version {version.split('_')[0]}", highlight=False)


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


# --------------------------------------------------------------------------- report list


def list_cmd(
    assignment: Annotated[str | None, typer.Argument(help="one assignment; default all")] = None,
    case: CaseOpt = None,
    gpu: GpuFilterOpt = None,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Every assignment and version with its latest run, per GPU: check, median, speedups, date, profiled."""
    from .analysis.listing import list_rows

    _, kernels, logs_dir = _paths(root, logs)
    try:
        rows = list_rows(kernels, logs_dir, assignment, case, gpu)
    except _user_errors() as e:
        _fail(str(e))
        return
    if not rows:
        console.print(f"no assignments under {kernels} and no records under {logs_dir}")
        return
    tables: dict[tuple[str, str | None], list[ListRow]] = {}
    for row in rows:
        tables.setdefault((row.assignment, row.gpu), []).append(row)
    for group in tables.values():
        console.print(_list_table(group))


def _list_table(rows: list[ListRow]) -> Table:
    from .analysis.diff import format_ms

    first = next((r.first_version for r in rows if r.first_version), None)
    device = next((r.run.device.name for r in rows if r.run is not None), None)
    on = f" · {device}" if device else f" · {rows[0].gpu}" if rows[0].gpu else " · no runs yet"
    earlier = any(r.peers_from_earlier_run for r in rows)
    narrow = console.width < 100  # 80 columns: peers' names cut, the date without its year
    table = Table(title=f"[bold]{rows[0].assignment}[/bold]{on} · case {rows[0].case}", title_justify="left",
                  box=None, header_style="bold", pad_edge=False, padding=(0, 1),
                  caption=("time: each version's figure, the mean of the run that stands for it (rested runs "
                           "first; report show VERSION says how it was taken)"
                           + ("\n* that run timed no peers: best peer and vs peer come from the latest run of the "
                              "same code that did" if earlier else "")), caption_justify="left",
                  collapse_padding=console.width < 100)  # one space between columns keeps 80 columns on one line
    table.add_column("version", no_wrap=True)
    table.add_column("check", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    table.add_column(f"vs {first.split('_')[0]}" if first else "vs first", justify="right", no_wrap=True)
    table.add_column("best peer", no_wrap=True)
    table.add_column("vs peer", justify="right", no_wrap=True)
    table.add_column("date (UTC)", no_wrap=True)
    table.add_column("ncu", no_wrap=True)  # profiled
    for row in rows:
        run = row.run
        if run is None:
            table.add_row(row.version, "", Text("not run", style="dim"), "", "", "", "", "")
            continue
        check = Text("ok", style="green") if run.check.passed else Text("FAIL", style="bold red")
        median = format_ms(run.timing.mean_ms) if run.timing else "—"
        vs_first = f"{row.speedup_vs_first:.2f}×" if row.speedup_vs_first else "—"
        vs_peer = f"{row.speedup_vs_best_peer:.2f}×" if row.speedup_vs_best_peer else "—"
        peer = row.best_peer or "—"
        if narrow and len(peer) > 12:
            peer = peer[:11] + "…"
        peer += "*" if row.peers_from_earlier_run else ""
        table.add_row(row.version, check, median, vs_first, peer, vs_peer,
                      run.created_utc.strftime("%m-%d %H:%M" if narrow else "%Y-%m-%d %H:%M"),
                      "yes" if row.profiled else "")
    return table


# --------------------------------------------------------------------------- report show


def show_cmd(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/")],
    version: Annotated[str, typer.Argument(help="version name or vNN")],
    case: CaseOpt = None,
    run_id: Annotated[str | None, typer.Option(
        "--run", help="a run id, or a unique prefix of one; default the run that stands for the version "
                      "(timed alone from a rested card before other kinds, the newest of its kind)")] = None,
    gpu: GpuOpt = None,
    all_metrics: Annotated[bool, typer.Option(
        "--all-metrics", help="every profiler metric, not only the CS149 block")] = False,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """One run in full (by default the one that stands for the version): the leaderboard block, the check,
    derived figures, peers, profile, code."""
    from .assignments import benchmark_case
    from .lookup import check_assignment, find_run, resolve_version, runs_of, standing_run_of
    from .analysis.listing import latest_run_with_peers

    _, kernels, logs_dir = _paths(root, logs)
    try:
        check_assignment(kernels, logs_dir, assignment)
        name = resolve_version(kernels, logs_dir, assignment, version)
        if run_id:
            run = find_run(logs_dir, assignment, name, run_id, case or benchmark_case(kernels, assignment),
                           kernels=kernels)
        else:
            run = standing_run_of(logs_dir, assignment, name, case or benchmark_case(kernels, assignment), gpu,
                                  kernels=kernels)
        peers_run = None if run.peers else latest_run_with_peers(runs_of(logs_dir, assignment, name,
                                                                         kernels=kernels), run)
    except _user_errors() as e:
        _fail(str(e))
        return
    _print_run(run, all_metrics, peers_run)


def _print_run(run: Run, all_metrics: bool = False, peers_run: Run | None = None) -> None:
    """``peers_run``: for a run that timed no peers, the latest of the same code that did (named, not shown)."""
    from .render.text import device_lines, leaderboard_block

    console.rule(f"[bold]{run.assignment} {run.version}[/bold] · {run.case_name} · run {run.run_id}", align="left")
    if run.timing:
        block = leaderboard_block(run.timing, title=f"{run.assignment} {run.version} · {run.case_name}",
                                  case=run.case, device_lines=device_lines(run.device))
    else:
        block = "not timed: " + (run.error or run.check.message or "the check failed")
        block += "\n\nRunning on:\n" + "\n".join(f"* {line}" for line in device_lines(run.device))
    console.print(Panel(Text(block), expand=False, border_style="dim"))
    console.print(_facts_grid(run))
    if run.derived:
        console.print(_derived_table(run))
    if run.peers:
        console.print(_peers_table(run))
    else:
        where = (f"; the latest run of this code that did: report show {run.assignment} "
                 f"{run.version.split('_')[0]} --run {peers_run.run_id}" if peers_run is not None else "")
        console.print(f"peers: none timed in this run{where}", style="dim", highlight=False)
    _print_profile(run, all_metrics)
    console.print(_code_table(run))


def _facts_grid(run: Run) -> Table:
    """The check and the timing method, two lines each, labelled on the left."""
    from .analysis.diff import format_ms, format_ms_range
    from .analysis.stats import median_ci

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    c = run.check
    tol = c.criterion
    verdict = Text("✔ passed" if c.passed else "✘ FAILED", style="green" if c.passed else "bold red")
    verdict.append(f": {c.mismatches:,} of {c.n_elements:,} elements out of tolerance ({tol}, seed {c.seed})")
    errors = [f"{label} {value:.3g}" for label, value in (("max abs error", c.max_abs_error),
                                                          ("max rel error", c.max_rel_error)) if value is not None]
    if c.nan_count or c.inf_count:
        errors.append(f"{c.nan_count} NaN, {c.inf_count} inf")
    if run.ranked_checks:
        failed = sum(not r.passed for r in run.ranked_checks)
        errors.append(f"ranked re-checks {len(run.ranked_checks) - failed}/{len(run.ranked_checks)} passed")
    if not c.passed and c.message:
        errors.append(c.message)
    grid.add_row("check", Text.assemble(verdict, "\n" + "; ".join(errors) if errors else ""))
    if run.timing:
        t = run.timing
        ci = median_ci(t.samples_ms)
        grid.add_row("timing", f"median {format_ms(t.median_ms, 5)}, {ci.coverage:.0%} CI "
                               f"{format_ms_range(ci.low_ms, ci.high_ms)}; n={t.n}, stopped by {t.stop_reason}\n"
                               f"{t.method}, L2 flush {'on' if t.l2_flush else 'off'}, {t.warmup_reps} warm-up calls"
                               + (", ranked (fresh input every repetition)" if t.ranked else ""))
    return grid


def _derived_table(run: Run) -> Table:
    from .render.diff_text import figure_value

    d = run.derived
    assert d is not None
    table = Table(title="derived from the work model", title_justify="left", box=None, header_style="bold",
                  pad_edge=False, padding=(0, 1))
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("", style="dim")
    table.add_row("compute", f"{d.tflops:,.1f}", "TFLOP/s")
    table.add_row("memory traffic", f"{d.gbps:,.1f}", "GB/s")
    table.add_row("arithmetic intensity", f"{d.arithmetic_intensity:,.1f}", "flop/B")
    if d.ceiling_value is not None:
        table.add_row(f"ceiling ({d.ceiling})", f"{d.ceiling_value:,.1f}", d.ceiling_unit or "")
    if d.fraction_of_ceiling is not None:
        table.add_row("fraction of ceiling", figure_value(d.fraction_of_ceiling, "of ceiling"), "")
    if d.floor_ms is not None:
        table.add_row("roofline floor", f"{d.floor_ms:.3f}", "ms")
    return table


def _peers_table(run: Run) -> Table:
    from .analysis.diff import format_ms

    table = Table(title="peers timed in the same run", title_justify="left", box=None, header_style="bold",
                  pad_edge=False, padding=(0, 1))
    table.add_column("peer", no_wrap=True)
    table.add_column("check")
    table.add_column("median", justify="right", no_wrap=True)
    table.add_column(f"{run.version.split('_')[0]} vs peer", justify="right")
    table.add_column("what it is", style="dim")
    ours = run.timing.mean_ms if run.timing else None
    for p in run.peers:
        if p.timing is None:
            table.add_row(p.name, Text("error", style="red"), "—", "—", p.error or p.description)
            continue
        check = "ok" if p.check is None or p.check.passed else "FAIL"
        speedup = f"{p.timing.mean_ms / ours:.2f}×" if ours else "—"
        table.add_row(p.name, check, format_ms(p.timing.mean_ms), speedup, p.description)
    return table


def _print_profile(run: Run, all_metrics: bool) -> None:
    from .ncu_metrics import CS149_BLOCK
    from .render.diff_text import figure_value

    p = run.profile
    if p is None:
        console.print("profile: none taken", style="dim")
        return
    head = f"profile: {p.tool} {p.tool_version or ''}".rstrip() + f", {p.status}"
    if p.status != "ok":
        console.print(head + (f": {p.reason}" if p.reason else ""), highlight=False)
        return
    console.print(head + f", {len(p.kernels)} kernel(s)", highlight=False)
    block = [(label, metric) for label, metric in CS149_BLOCK]
    hidden = 0
    for k in p.kernels:
        table = Table(title=f"#{k.index} {k.name}", title_justify="left", box=None, header_style="bold",
                      pad_edge=False, padding=(0, 1))
        table.add_column("metric", overflow="fold")
        table.add_column("value", justify="right", no_wrap=True)
        if k.grid or k.block:
            table.add_row("launch", f"grid {k.grid} × block {k.block}")
        shown = [(label, k.metrics[m]) for label, m in block if m in k.metrics]
        if all_metrics:
            named = {m for _, m in block}
            shown += [(name, m) for name, m in k.metrics.items() if name not in named]
        hidden += len(k.metrics) - len(shown)
        for label, m in shown:
            table.add_row(label, figure_value(m.value, m.unit))
        console.print(table)
    if hidden:
        console.print(f"[dim]{hidden} more metrics in the record: report show ... --all-metrics[/dim]")


def _code_table(run: Run) -> Table:
    c = run.code
    state = "clean" if c.git_dirty is False else "dirty: uncommitted changes" if c.git_dirty else "state unknown"
    table = Table.grid(padding=(0, 1))
    table.title = f"code {c.digest} · commit {c.git_commit or 'unknown'} ({state})"
    table.title_justify = "left"
    table.title_style = "bold"
    table.add_column(no_wrap=True)
    for f in c.files:
        table.add_row(f"{f.path}  [dim]{len(f.text.splitlines())} lines[/dim]")
        table.add_row(f"  [dim]sha256[/dim] {f.sha256}")
    if c.config:
        table.add_row("config: " + ", ".join(f"{k}={v}" for k, v in c.config.items()))
    return table


# --------------------------------------------------------------------------- report diff


def diff_cmd(
    runs: Annotated[list[str], typer.Argument(
        metavar="ASSIGNMENT A B | A.json B.json", show_default=False,
        help="an assignment and two versions (v02, v02_fused_triton, or v02@RUN_ID for one run), or two record files")],
    case: CaseOpt = None,
    gpu: GpuOpt = None,
    fmt: Annotated[DiffFormat, typer.Option("--format", "-f", help="output format")] = DiffFormat.text,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="write to this file instead of stdout")] = None,
    fail_if_slower: Annotated[float | None, typer.Option(
        "--fail-if-slower", metavar="PCT",
        help="exit 1 when B is significantly slower than A by more than PCT percent, or failed its check")] = None,
    min_effect: Annotated[float, typer.Option("--min-effect", metavar="PCT", help=(
        "smallest change of the median called real, percent: smaller ones are 'same' however significant"))] = 1.0,
    code: Annotated[bool, typer.Option("--code/--no-code", help="show the code diff (text format)")] = True,
    figures: Annotated[int, typer.Option("--figures", metavar="N",
                                         help="profiler metrics shown, most moved first (0: all; json has all)")] = 25,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """What changed between two runs, and whether the change in time is real (faster, slower, same)."""
    from .analysis.diff import diff_runs
    from .worklog_sections import read_worklog_sections
    from .lookup import resolve_pair

    _, kernels, logs_dir = _paths(root, logs)
    if fail_if_slower is not None and fail_if_slower < 0:
        _fail(f"--fail-if-slower must be a percentage ≥ 0, got {fail_if_slower:g}")
    if min_effect < 0:
        _fail(f"--min-effect must be a percentage ≥ 0, got {min_effect:g}")
    if figures < 0:
        _fail(f"--figures must be 0 (all) or a positive count, got {figures}")
    try:
        a, b = resolve_pair(kernels, logs_dir, runs, case, gpu)
        notes_a, notes_b = (read_worklog_sections(kernels, a.assignment, a.version, b.version)
                            if a.assignment == b.assignment else (None, None))
        d = diff_runs(a, b, notes_a=notes_a, notes_b=notes_b, min_effect_pct=min_effect)
    except _user_errors() as e:
        _fail(str(e))
        return
    _emit_diff(d, fmt, output, code, figures)
    if fail_if_slower is not None and not d.b.check_passed:
        err.print(f"[bold red]failed:[/bold red] {d.b.version} failed its check, so it has no time to compare "
                  "(--fail-if-slower treats that as a failure)", highlight=False)
        raise typer.Exit(1)
    if fail_if_slower is not None and d.slower_beyond(fail_if_slower):
        assert d.verdict is not None
        err.print(f"[bold red]slower:[/bold red] {d.b.version} is {d.verdict.change_pct:.1f}% slower than "
                  f"{d.a.version}, beyond the {fail_if_slower:g}% allowed by --fail-if-slower", highlight=False)
        raise typer.Exit(1)


def _emit_diff(d: RunDiff, fmt: DiffFormat, output: Path | None, show_code: bool, profile_limit: int) -> None:
    from .render.diff_text import diff_html, diff_markdown

    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
    if fmt is DiffFormat.text:
        if output is None:
            _print_diff(console, d, show_code, profile_limit)
            return
        with output.open("w", encoding="utf-8") as f:
            _print_diff(Console(file=f, width=100, no_color=True, force_terminal=False), d, show_code, profile_limit)
    else:
        text = {DiffFormat.markdown: lambda x: diff_markdown(x, profile_limit),
                DiffFormat.html: lambda x: diff_html(x, profile_limit),
                DiffFormat.json: lambda x: x.model_dump_json(indent=2) + "\n"}[fmt](d)
        if output is None:
            console.file.write(text)
            return
        output.write_text(text, encoding="utf-8")
    err.print(f"{fmt.value} diff written to {output}", highlight=False)


def _print_diff(out: Console, d: RunDiff, show_code: bool, profile_limit: int) -> None:
    from .render.diff_text import select_figures

    a, b = d.a, d.b
    case = a.case_name if a.case_name == b.case_name else f"{a.case_name} → {b.case_name}"
    out.rule(f"[bold]{a.assignment}[/bold]: {a.version} → {b.version} · {case}", align="left")
    out.print(_refs_table(d, out.width))
    if d.warnings:
        out.print(Panel("\n".join(f"• {w}" for w in d.warnings), border_style="bold red", expand=False,
                        title="[bold red]⚠ not apples to apples[/bold red]", title_align="left"))
    if d.verdict:
        out.print(Text(d.verdict.sentence, style=_VERDICT_STYLE[d.verdict.verdict]))
        out.print(_timing_table(d))
    else:
        out.print(Text(d.timing_note, style="bold yellow"))
    for remark in d.remarks:
        out.print(f"[dim]• {remark}[/dim]", highlight=False)
    selection = select_figures(d, profile_limit)
    if selection.shown:
        out.print(_figures_table(selection.shown))
    if selection.note:
        out.print(f"[dim]{selection.note}[/dim]", highlight=False)
    for t in d.text_changes:
        out.print(f"{t.group} {t.name}: {t.a} → {t.b}", highlight=False)
    _print_code(out, d, show_code)
    _print_notes(out, d)


def _refs_table(d: RunDiff, width: int) -> Table:
    same_gpu = d.a.gpu == d.b.gpu
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False, padding=(0, 1),
                  collapse_padding=width < 100,
                  caption=f"both on {d.a.gpu}" if same_gpu else None, caption_justify="left")
    for col in ("", "version", "run", *([] if same_gpu else ["GPU"]), "commit", "code"):
        table.add_column(col, no_wrap=True)
    for side, r in (("A", d.a), ("B", d.b)):
        commit = (r.git_commit or "?") + (" [yellow](dirty)[/yellow]" if r.git_dirty else "")
        run_id = r.run_id if width >= 100 else r.run_id.split("_")[0]  # the rest repeats GPU and case
        table.add_row(side, r.version, run_id, *([] if same_gpu else [_gpu_label(r.gpu)]), commit, r.code_digest)
    return table


def _gpu_label(name: str) -> str:
    from .records import gpu_slug

    return gpu_slug(name)


def _timing_table(d: RunDiff) -> Table:
    from .analysis.diff import format_ms
    from .render.diff_text import rel_change_text

    v = d.verdict
    assert v is not None
    table = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 1))
    for col, justify in (("timing", "left"), ("A", "right"), ("B", "right"), ("change", "right"), ("B/A", "right")):
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in d.timing_rows:
        is_ms = row.unit == "ms"
        a, b = (format_ms(row.a, 5), format_ms(row.b, 5)) if is_ms else (f"{row.a:g}", f"{row.b:g}")
        table.add_row(row.name, a, b, rel_change_text(row.rel_change), f"{row.b / row.a:.3f}" if row.a else "—")
    table.add_row("median CI", _ci_text(v.ci_a, v.ci_coverage_a), _ci_text(v.ci_b, v.ci_coverage_b), "", "")
    return table


def _ci_text(ci: tuple[float, float], coverage: float) -> str:
    from .analysis.diff import format_ms_range

    return f"{format_ms_range(*ci)} ({coverage:.0%})"


def _figures_table(figures: list[FigureDelta]) -> Table:
    from .render.diff_text import figure_label, figure_value, rel_change_text

    table = Table(title="figures both runs have, most moved first", title_justify="left", box=None,
                  header_style="bold", pad_edge=False, padding=(0, 1))
    table.add_column("group", no_wrap=True, style="dim", max_width=24, overflow="ellipsis")
    table.add_column("figure", overflow="fold")
    table.add_column("A", justify="right", no_wrap=True)
    table.add_column("B", justify="right", no_wrap=True)
    table.add_column("change", justify="right", no_wrap=True)
    for f in figures:
        change = rel_change_text(f.rel_change)
        style = "" if f.rel_change == 0 else "bold" if f.moved >= 0.05 else ""
        table.add_row(f.group.replace("profile ", "ncu ", 1), figure_label(f), figure_value(f.a, f.unit),
                      figure_value(f.b, f.unit), Text(change, style=style))
    return table


def _print_code(out: Console, d: RunDiff, show_code: bool) -> None:
    from rich.syntax import Syntax

    if not d.code:
        out.print("code: no change", style="dim")
        return
    for f in d.code:
        out.print(f"[bold]code[/bold] {_paths_pair(f.path_a, f.path_b)}: "
                  f"[green]+{f.lines_added}[/green] [red]−{f.lines_removed}[/red]", highlight=False)
        if show_code:
            out.print(Syntax(f.unified.rstrip("\n"), "diff", theme="ansi_dark", background_color="default",
                             word_wrap=False))


def _paths_pair(path_a: str | None, path_b: str | None) -> str:
    """'kernels/x/{v01.py → v02.py}' when both sit in one folder."""
    if path_a and path_b:
        head_a, _, name_a = path_a.rpartition("/")
        head_b, _, name_b = path_b.rpartition("/")
        if head_a == head_b:
            return f"{head_a}/{{{name_a} → {name_b}}}" if name_a != name_b else path_a
    return f"{path_a or '(new)'} → {path_b or '(removed)'}"


def _print_notes(out: Console, d: RunDiff) -> None:
    from rich.syntax import Syntax

    if d.notes_diff:
        out.print("[bold]notes[/bold] (worklog.md sections)")
        out.print(Syntax(d.notes_diff.rstrip("\n"), "diff", theme="ansi_dark", background_color="default",
                         word_wrap=True))
    else:
        out.print(f"notes: {d.notes_note or 'no change'}", style="dim")


# --------------------------------------------------------------------------- report history


def history_cmd(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/")],
    version: Annotated[str, typer.Argument(help="version name or vNN")],
    case: CaseOpt = None,
    gpu: GpuFilterOpt = None,
    chart: Annotated[Path | None, typer.Option(
        "--chart", metavar="PATH.svg", help="also draw the medians over time as an SVG")] = None,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Every run of one version over time: median and CI, GPU, commit, code, and whether it moved."""
    from .assignments import benchmark_case
    from .lookup import candidate_runs, check_assignment, resolve_version

    _, kernels, logs_dir = _paths(root, logs)
    if chart is not None and chart.suffix.lower() != ".svg":
        _fail(f"--chart {chart}: the chart is written as SVG, give a path ending in .svg")
    try:
        check_assignment(kernels, logs_dir, assignment)
        name = resolve_version(kernels, logs_dir, assignment, version)
        on_case = case or benchmark_case(kernels, assignment)
        found = candidate_runs(logs_dir, assignment, name, on_case, gpu, kernels=kernels)
    except _user_errors() as e:
        _fail(str(e))
        return
    console.print(_history_table(assignment, name, on_case, found))
    if chart is not None:
        _history_chart(found, chart, f"{assignment} {name} · {on_case}")
        console.print(f"chart written to {chart}", highlight=False)


def _history_table(assignment: str, version: str, case: str, found: list[Run]) -> Table:
    from .analysis.diff import comparability_warnings, compare_timing, format_ms, format_ms_range
    from .analysis.stats import median_ci

    gpus = list(dict.fromkeys(r.device.slug for r in found))
    on = f" · on {found[0].device.name}" if len(gpus) == 1 else ""
    table = Table(title=f"[bold]{assignment} {version}[/bold] · case {case}{on} · {len(found)} run(s)",
                  title_justify="left", box=None, header_style="bold", pad_edge=False, padding=(0, 1),
                  collapse_padding=console.width < 100,
                  caption=f"vs previous: the diff verdict against the run above on the same GPU (⚠: measured "
                          f"differently, see report diff); runs of different sessions can differ by a few percent "
                          f"with the card's state alone; name a run as {version.split('_')[0]}@<run id prefix>",
                  caption_justify="left")
    table.add_column("run id", no_wrap=True, overflow="ellipsis")  # a cut id is still a usable prefix
    if len(gpus) > 1:
        table.add_column("GPU", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("median (99% CI)", justify="right", no_wrap=True)
    table.add_column("vs previous", no_wrap=True)
    table.add_column("commit", no_wrap=True)
    table.add_column("code", no_wrap=True)
    previous_on: dict[str, Run] = {}
    for run in found:
        commit = (run.code.git_commit or "?")[:8] + ("*" if run.code.git_dirty else "")
        gpu = [run.device.slug] if len(gpus) > 1 else []
        if run.timing is None:
            table.add_row(run.run_id[:19], *gpu, "—", Text("check failed", style="red"), "", commit,
                          run.code.digest[:8])
            continue
        ci = median_ci(run.timing.samples_ms)
        ci_text = format_ms_range(ci.low_ms, ci.high_ms).removesuffix(" ms")
        median = f"{format_ms(run.timing.median_ms)} [dim]({ci_text})[/dim]"
        vs = Text("")
        before = previous_on.get(run.device.slug)
        if before is not None and before.timing is not None:
            v = compare_timing(before.timing, run.timing)
            label = "same" if v.verdict == "same" else (
                f"{1 / v.ratio:.2f}× faster" if v.verdict == "faster" else f"{v.ratio:.2f}× slower")
            vs = Text(label, style={"faster": "green", "slower": "red"}.get(v.verdict, ""))
            if comparability_warnings(before, run):
                vs.append(" ⚠", style="bold yellow")
            if before.code.digest != run.code.digest:
                vs.append(" (code)", style="dim")
        table.add_row(run.run_id[:19], *gpu, str(run.timing.n), median, vs, commit, run.code.digest[:8])
        previous_on[run.device.slug] = run
    return table


def _history_chart(found: list[Run], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .analysis.stats import median_ci

    timed = [r for r in found if r.timing is not None]
    fig, ax = plt.subplots(figsize=(7, 3.2), layout="constrained")
    for gpu in dict.fromkeys(r.device.slug for r in timed):
        xs, ys, lo, hi = [], [], [], []
        for i, r in enumerate(timed):
            if r.device.slug != gpu:
                continue
            ci = median_ci(r.timing.samples_ms)  # type: ignore[union-attr]
            med = r.timing.median_ms  # type: ignore[union-attr]
            xs.append(i)
            ys.append(med)
            lo.append(med - ci.low_ms)
            hi.append(ci.high_ms - med)
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=4, label=gpu)
    ax.set_xticks(range(len(timed)), [r.created_utc.strftime("%m-%d\n%H:%M") for r in timed], fontsize=8)
    ax.set_ylabel("median (ms) and its CI")  # 99 %, or [min, max] when the samples are too few
    ax.set_xlabel("run (UTC)", fontsize=8)
    ax.margins(x=0.08)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    if len({r.device.slug for r in timed}) > 1:
        ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg")
    plt.close(fig)


# --------------------------------------------------------------------------- registration


_DIFF_EXAMPLES = (
    "[bold]Examples[/bold]: report diff ASSIGNMENT v02 v03 · report diff ASSIGNMENT v03 v03 (its last two runs) · "
    "report diff ASSIGNMENT v02@20261122T0149 v02 -f html -o diff.html · "
    "report diff a.json b.json --fail-if-slower 2 (in CI)"
)


def register(app: typer.Typer) -> None:
    app.command("new")(new_cmd)
    app.command("list")(list_cmd)
    app.command("show")(show_cmd)
    app.command("diff", epilog=_DIFF_EXAMPLES)(diff_cmd)
    app.command("history")(history_cmd)
