"""`report build`: build the hand-in report (HTML and PDF) from the records and worklog.md. No GPU
needed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..assignments import AssignmentError, get_assignment
from ..store import RecordError
from .common import LogsOpt, RootOpt, console, err, fail, project_paths

NAME = "build"


def command(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/, e.g. flashattn")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="output folder; default reports/<assignment>")] = None,
    gpu: Annotated[str | None, typer.Option(help="GPU label of the records to use (e.g. h100); default the newest")] = None,
    pdf: Annotated[bool, typer.Option(help="also write the PDF (WeasyPrint)")] = True,
    anonymous: Annotated[bool, typer.Option(help="leave the authors out (for blind grading)")] = False,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Build the hand-in report (HTML and PDF) from the records and worklog.md. No GPU needed."""
    import time

    from ..analysis.summary import SummaryError
    from ..render.report import build
    from ..render.worklog import WorklogError

    t0 = time.perf_counter()
    repo, kernels, logs_dir = project_paths(root, logs)
    out_dir = (out or repo / "reports" / assignment).resolve()
    try:
        a = get_assignment(kernels, assignment)
        with console.status(f"building the {assignment} report"):
            result = build(a, repo, logs_dir, out_dir, gpu=gpu, pdf=pdf, anonymous=anonymous)
    except (AssignmentError, RecordError, SummaryError, WorklogError) as e:
        fail(str(e))
    for w in result.warnings:
        err.print(f"[yellow]worklog:[/yellow] {w}", highlight=False)
    console.print(f"HTML: {result.html}")
    if result.pdf:
        console.print(f"PDF:  {result.pdf} ({result.pages} pages)")
    elif result.pdf_error:
        err.print(f"[yellow]warning:[/yellow] {result.pdf_error}")
    console.print(f"[dim]built in {time.perf_counter() - t0:.2f} s[/dim]")
    if result.pdf_error:
        raise typer.Exit(1)
