"""`report diff`: what changed between two runs, and whether the change in time is real (faster,
slower, same)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from ..render.tables import VERDICT_STYLE, figures_table, paths_pair, refs_table, timing_table
from .common import CaseOpt, GpuOpt, LogsOpt, RootOpt, console, err, fail, finite, project_paths, user_errors

if TYPE_CHECKING:
    from ..analysis.diff import RunDiff

NAME = "diff"
EPILOG = (
    "[bold]Examples[/bold]: report diff ASSIGNMENT v02 v03 · report diff ASSIGNMENT v03 v03 (its last two runs) · "
    "report diff ASSIGNMENT v02@20261122T0149 v02 -f html -o diff.html · "
    "report diff a.json b.json --fail-if-slower 2 (in CI)"
)


class DiffFormat(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"
    html = "html"



def command(
    runs: Annotated[list[str], typer.Argument(
        metavar="ASSIGNMENT A B | A.json B.json", show_default=False,
        help="an assignment and two versions (v02, v02_fused_triton, or v02@RUN_ID for one run), or two record files")],
    case: CaseOpt = None,
    gpu: GpuOpt = None,
    fmt: Annotated[DiffFormat, typer.Option("--format", "-f", help="output format")] = DiffFormat.text,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="write to this file instead of stdout")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="with --output: replace an existing file that differs from this diff")] = False,
    fail_if_slower: Annotated[float | None, typer.Option(
        "--fail-if-slower", metavar="PCT", callback=finite(),
        help="exit 1 when B is significantly slower than A by more than PCT percent, or failed its check")] = None,
    min_effect: Annotated[float, typer.Option("--min-effect", metavar="PCT", callback=finite(high=100.0), help=(
        "smallest change of the median called real, percent: smaller ones are 'same' however significant"))] = 1.0,
    code: Annotated[bool, typer.Option("--code/--no-code", help="show the code diff (text format)")] = True,
    figures: Annotated[int, typer.Option("--figures", metavar="N",
                                         help="profiler metrics shown, most moved first (0: all; json has all)")] = 25,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """What changed between two runs, and whether the change in time is real (faster, slower, same)."""
    from ..analysis.diff import diff_runs
    from ..lookup import resolve_pair
    from ..worklog_sections import read_worklog_sections

    _, kernels, logs_dir = project_paths(root, logs)
    if fail_if_slower is not None and fail_if_slower < 0:
        fail(f"--fail-if-slower must be a percentage ≥ 0, got {fail_if_slower:g}")
    if min_effect < 0:
        fail(f"--min-effect must be a percentage ≥ 0, got {min_effect:g}")
    if figures < 0:
        fail(f"--figures must be 0 (all) or a positive count, got {figures}")
    try:
        a, b = resolve_pair(kernels, logs_dir, runs, case, gpu)
        notes_a, notes_b = (read_worklog_sections(kernels, a.assignment, a.version, b.version)
                            if a.assignment == b.assignment else (None, None))
        d = diff_runs(a, b, logs=logs_dir, notes_a=notes_a, notes_b=notes_b, min_effect_pct=min_effect)
    except user_errors() as e:
        fail(str(e))
        return
    _emit_diff(d, fmt, output, code, figures, force)
    if fail_if_slower is not None and not d.b.check_passed:
        err.print(f"[bold red]failed:[/bold red] {d.b.version} failed its check, so it has no time to compare "
                  "(--fail-if-slower treats that as a failure)", highlight=False)
        raise typer.Exit(1)
    if fail_if_slower is not None and d.slower_beyond(fail_if_slower):
        assert d.verdict is not None
        err.print(f"[bold red]slower:[/bold red] {d.b.version} is {d.verdict.change_pct:.1f}% slower than "
                  f"{d.a.version}, beyond the {fail_if_slower:g}% allowed by --fail-if-slower", highlight=False)
        raise typer.Exit(1)



def _emit_diff(d: RunDiff, fmt: DiffFormat, output: Path | None, show_code: bool, profile_limit: int,
               force: bool = False) -> None:
    import io

    from ..outputs import OutputError, write_output
    from ..render.diff_text import diff_html, diff_markdown

    if fmt is DiffFormat.text:
        if output is None:
            _print_diff(console, d, show_code, profile_limit)
            return
        buf = io.StringIO()
        _print_diff(Console(file=buf, width=100, no_color=True, force_terminal=False), d, show_code, profile_limit)
        text = buf.getvalue()
    else:
        text = {DiffFormat.markdown: lambda x: diff_markdown(x, profile_limit),
                DiffFormat.html: lambda x: diff_html(x, profile_limit),
                DiffFormat.json: lambda x: x.model_dump_json(indent=2) + "\n"}[fmt](d)
        if output is None:
            console.file.write(text)
            return
    try:  # whole or not at all: a full disk or an interruption leaves the previous file as it was; only
        # a regular file, and one that differs only with --force (reporter.outputs)
        write_output(output, text, force=force)
    except OutputError as e:
        fail(f"--output {e}")
        return
    err.print(f"{fmt.value} diff written to {output}", highlight=False)


def _print_diff(out: Console, d: RunDiff, show_code: bool, profile_limit: int) -> None:
    from ..render.diff_text import select_figures

    a, b = d.a, d.b
    case = a.case_name if a.case_name == b.case_name else f"{a.case_name} → {b.case_name}"
    out.rule(f"[bold]{a.assignment}[/bold]: {a.version} → {b.version} · {case}", align="left")
    out.print(refs_table(d, out.width))
    if d.warnings:
        out.print(Panel("\n".join(f"• {w}" for w in d.warnings), border_style="bold red", expand=False,
                        title="[bold red]⚠ not apples to apples[/bold red]", title_align="left"))
    if d.verdict:
        out.print(Text(d.verdict.sentence, style=VERDICT_STYLE[d.verdict.verdict]))
        out.print(timing_table(d))
    else:
        out.print(Text(d.timing_note, style="bold yellow"))
    for remark in d.remarks:
        out.print(f"[dim]• {remark}[/dim]", highlight=False)
    selection = select_figures(d, profile_limit)
    if selection.shown:
        out.print(figures_table(selection.shown))
    if selection.note:
        out.print(f"[dim]{selection.note}[/dim]", highlight=False)
    for t in d.text_changes:
        out.print(f"{t.group} {t.name}: {t.a} → {t.b}", highlight=False)
    _print_code(out, d, show_code)
    _print_notes(out, d)



def _print_code(out: Console, d: RunDiff, show_code: bool) -> None:
    from rich.syntax import Syntax

    if not d.code:
        out.print("code: no change", style="dim")
        return
    for f in d.code:
        if f.unreadable:
            out.print(f"[bold]code[/bold] {paths_pair(f.path_a, f.path_b)}: [yellow]not compared[/yellow]: "
                      f"{escape(f.unreadable)}", highlight=False)
            continue
        out.print(f"[bold]code[/bold] {paths_pair(f.path_a, f.path_b)}: "
                  f"[green]+{f.lines_added}[/green] [red]−{f.lines_removed}[/red]", highlight=False)
        if show_code:
            out.print(Syntax(f.unified.rstrip("\n"), "diff", theme="ansi_dark", background_color="default",
                             word_wrap=False))



def _print_notes(out: Console, d: RunDiff) -> None:
    from rich.syntax import Syntax

    if d.notes_diff:
        out.print("[bold]notes[/bold] (worklog.md sections)")
        out.print(Syntax(d.notes_diff.rstrip("\n"), "diff", theme="ansi_dark", background_color="default",
                         word_wrap=True))
    else:
        out.print(f"notes: {d.notes_note or 'no change'}", style="dim")
