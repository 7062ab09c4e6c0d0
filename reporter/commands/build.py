"""`report build`: build the hand-in report (HTML and PDF) from the records and worklog.md, for one
assignment or all of them (with an index). No GPU needed."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..assignments import AssignmentError, get_assignment, list_assignments
from ..store import RecordError
from .common import LogsOpt, RootOpt, console, err, fail, project_paths

if TYPE_CHECKING:
    from ..render.pdf import Worker
    from ..render.report import BuildResult

NAME = "build"


def _only(value: str | None) -> list[str] | None:
    if value is None:
        return None
    handles = [h.strip() for h in value.split(",") if h.strip()]
    if not handles:
        fail("--only: give versions separated by commas, e.g. --only v01,v05,v14")
    return handles


def _out_problem(out: Path) -> str | None:
    """Why ``--out`` cannot be the folder the report is written in, or None: it is a file, it names a
    .pdf or .html that does not exist (a folder of that name would be made), or it goes through a file."""
    if out.is_dir():
        return None
    if out.exists() or out.is_symlink():
        return f"--out {out}: is a file, not a folder; --out names the folder the report is written in"
    if out.suffix.lower() in (".pdf", ".html", ".htm"):
        return (f"--out {out}: does not exist and names a {out.suffix.lower()[1:]} file; --out is the folder "
                "worklog.html and worklog.pdf are written in")
    for parent in out.parents:
        if parent.is_dir():
            return None
        if parent.exists() or parent.is_symlink():
            return f"--out {out}: cannot write: a part of the path is a file, not a folder ({parent})"
    return None


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _stop_on_sigterm_as_on_ctrl_c() -> None:
    """SIGTERM (a `kill`, a job runner's time limit) ends a build the way Ctrl-C does: the interrupt
    unwinds the build, so its temporary book folder and its PDF workers go with it and the outputs are
    left as they were; by default SIGTERM ends the process where it stands. (SIGKILL cannot be caught:
    the next build removes the folders such a build left, reporter.render.book.remove_stale_folders.)"""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupted)


def command(
    assignment: Annotated[str | None, typer.Argument(help="folder name under kernels/, e.g. flashattn")] = None,
    all_: Annotated[bool, typer.Option("--all", help="every assignment with a worklog.md and records, and an "
                                                      "index.html linking them")] = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="output folder; default reports/<assignment> "
                                                                 "(with --all: reports/)")] = None,
    gpu: Annotated[str | None, typer.Option(help="GPU label of the records to use (e.g. h100); default the one "
                                                 "worklog.md names, else the newest")] = None,
    html_only: Annotated[bool, typer.Option("--html-only", help="write the HTML, not the PDF")] = False,
    pdf_only: Annotated[bool, typer.Option("--pdf-only", help="write the PDF, not the HTML")] = False,
    pdf: Annotated[bool, typer.Option("--pdf/--no-pdf", help="also write the PDF (--no-pdf: as --html-only)")] = True,
    case: Annotated[str | None, typer.Option("--case", "-c", help="the case every figure is taken on; default the "
                                                                 "assignment's benchmark case")] = None,
    only: Annotated[str | None, typer.Option("--only", help="the versions to show, e.g. v01,v05,v14 (the report "
                                                            "says which it leaves out)")] = None,
    anonymous: Annotated[bool, typer.Option(help="leave the authors out (for blind grading)")] = False,
    warn_contradictions: Annotated[bool, typer.Option(
        "--warn-contradictions", help="print a figure, ratio or verdict printed with two values as a warning "
                                      "instead of failing the build")] = False,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Build the hand-in report (HTML and PDF) from the records and worklog.md. No GPU needed."""
    t0 = time.perf_counter()
    _stop_on_sigterm_as_on_ctrl_c()
    if html_only and pdf_only:
        fail("--html-only and --pdf-only: choose one")
    write_pdf, write_html = (pdf and not html_only), not pdf_only
    if pdf_only and not pdf:
        fail("--pdf-only and --no-pdf: choose one")
    if all_ == (assignment is not None):
        fail("name one assignment (e.g. `report build flashattn`) or give --all")
    if all_ and (case or only):
        fail("--case and --only choose within one assignment; they do not go with --all")
    repo, kernels, logs_dir = project_paths(root, logs)
    if out is not None and (problem := _out_problem(out)):
        fail(problem)
    if assignment is not None:
        try:
            a = get_assignment(kernels, assignment)
        except AssignmentError as e:
            fail(str(e))
            return
        with console.status(f"building the {assignment} report"):
            result = _build_one(a, repo, logs_dir, (out or repo / "reports" / assignment).resolve(), gpu=gpu,
                                pdf=write_pdf, html=write_html, anonymous=anonymous, case=case, only=_only(only),
                                strict=not warn_contradictions)
        if isinstance(result, str):
            fail(result)
            return
        _print(result)
        console.print(f"[dim]built in {time.perf_counter() - t0:.2f} s[/dim]")
        if result.pdf_error:
            raise typer.Exit(1)
        return
    _build_all(repo, kernels, logs_dir, (out or repo / "reports").resolve(), gpu=gpu, pdf=write_pdf, html=write_html,
               anonymous=anonymous, strict=not warn_contradictions, t0=t0)


def _build_one(a, repo: Path, logs_dir: Path, out_dir: Path, *, workers: list[Worker] | None = None,
               **options) -> BuildResult | str:
    """The build's result, or the one-line reason it could not be built."""
    from ..analysis.summary import SummaryError
    from ..outputs import OutputError
    from ..render.report import ContradictionError, build
    from ..render.worklog import WorklogError

    try:
        return build(a, repo, logs_dir, out_dir, workers=workers, **options)
    except (AssignmentError, RecordError, SummaryError, WorklogError, ContradictionError, OutputError) as e:
        return str(e)
    except OSError as e:
        return f"{e.filename or out_dir}: {e.strerror or e}"


def _print(result: BuildResult, prefix: str = "") -> None:
    for w in result.warnings:
        err.print(f"[yellow]{prefix}worklog:[/yellow] {w}", highlight=False)
    if result.html:
        console.print(f"{prefix}HTML: {result.html}")
    if result.pdf:
        console.print(f"{prefix}PDF:  {result.pdf} ({result.pages} pages)")
    elif result.pdf_error:
        err.print(f"[yellow]{prefix}warning:[/yellow] {result.pdf_error}")


def _fresh(workers: list[Worker]) -> list[Worker]:
    """The workers, each that is busy or has ended replaced by a new one (a busy one is stopped)."""
    from ..render.pdf import Worker

    out = []
    for w in workers:
        if w.usable:
            out.append(w)
        else:
            w.close()
            out.append(Worker())
    return out


def _build_all(repo: Path, kernels: Path, logs_dir: Path, out_dir: Path, *, t0: float, **options) -> None:
    """Every assignment that has a worklog.md and records, on one pair of PDF workers, then the index."""
    from ..render.index import Entry, render_index
    from ..render.pdf import Worker
    from ..render.report import WORKERS
    from ..store import write_atomic

    found = [a for a in list_assignments(kernels) if a.worklog_path.is_file() and (logs_dir / a.name).is_dir()]
    if not found:
        fail(f"no assignment under {kernels} has both a worklog.md and records under {logs_dir}")
    workers = [Worker() for _ in range(WORKERS)] if options["pdf"] else []
    entries: list[Entry] = []
    failed = False
    try:
        for a in found:
            with console.status(f"building the {a.name} report"):
                result = _build_one(a, repo, logs_dir, out_dir / a.name, workers=workers, **options)
            if isinstance(result, str):
                err.print(f"[bold red]{a.name}:[/bold red] {result}", highlight=False)
                entries.append(Entry(a.name, a.title, error=result))
                failed = True
                workers = _fresh(workers)  # a build stopped early leaves its parts queued on them
                continue
            _print(result, prefix=f"{a.name} ")
            failed |= result.pdf_error is not None
            entries.append(Entry(a.name, result.title, result.cover, result.gpu, html=result.html is not None,
                                 pdf=result.pdf is not None, pages=result.pages, pdf_error=result.pdf_error))
            workers = _fresh(workers)  # a failed PDF step may have ended one
    finally:
        for w in workers:
            w.close()
    from ..outputs import OutputError, check_target

    index = out_dir / "index.html"
    try:  # a file of the tool's name in the folder given: replaced each build, but only a regular file
        check_target(index)
        write_atomic(index, render_index(entries))
    except OutputError as e:
        fail(str(e))
    except OSError as e:
        fail(f"{index}: cannot write: {e.strerror or e}")
    console.print(f"index: {index} ({len(entries)} assignments)")
    console.print(f"[dim]built in {time.perf_counter() - t0:.2f} s[/dim]")
    if failed:
        raise typer.Exit(1)
