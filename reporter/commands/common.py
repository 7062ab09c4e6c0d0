"""What every command shares, declared once: the consoles, the options that say where the project
and its records are, and how a command fails (one line naming the culprit, exit code 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from ..assignments import AssignmentError, find_repo_root
from ..store import RecordError

console = Console()
err = Console(stderr=True, soft_wrap=True)

RootOpt = Annotated[Path | None, typer.Option(
    "--root", help="project root (holds kernels/ and logs/); default: found upwards from here")]
LogsOpt = Annotated[Path | None, typer.Option("--logs", help="records folder; default: <root>/logs")]
CaseOpt = Annotated[str | None, typer.Option("--case", "-c", help=(
    "case name; default the assignment's BENCHMARK_CASE (for a version whose CASES_WHERE leaves it out, the first "
    "of BENCHMARK_CASES it runs)"))]
GpuOpt = Annotated[str | None, typer.Option(
    "--gpu", help="GPU label of the runs to use (e.g. h100); default the newest")]
HoldOpt = Annotated[bool, typer.Option(
    "--hold", help="hold the stream until each timed call is queued, so host launch time stays out of the samples "
                   "(method cuda-events+hold)")]
QuickOpt = Annotated[bool, typer.Option(
    "--quick", help="a look, not a record: the same check and timing loop, nothing written under logs/ (not even "
                    "measured ceilings); `report run` also takes fewer calls and no rest unless given (see --max-reps)")]
GpuFilterOpt = Annotated[str | None, typer.Option("--gpu", help="only runs on this GPU label (e.g. h100)")]


def finite(*, low: float = 0.0, low_open: bool = False, high: float | None = None):
    """A typer callback for a float option: a finite number at least ``low`` (above it with
    ``low_open``) and at most ``high``; 'nan', 'inf' and the rest get one clear line naming the option."""
    import math

    def check(ctx: typer.Context, param: typer.CallbackParam, value: float | None) -> float | None:
        if value is None:
            return value
        name = param.opts[0] if param.opts else param.name
        if not math.isfinite(value):
            raise typer.BadParameter(f"{value} is not a finite number", param_hint=name)
        if value < low or (low_open and value == low):
            raise typer.BadParameter(f"{value:g} is {'not above' if low_open else 'below'} {low:g}", param_hint=name)
        if high is not None and value > high:
            raise typer.BadParameter(f"{value:g} is above {high:g}", param_hint=name)
        return value

    return check


IsolateOpt = Annotated[bool, typer.Option(
    "--isolate/--no-isolate",
    help="run the kernels in a worker process, so that one that crashes, poisons the CUDA context (an illegal "
         "address) or hangs loses only its own record (default); --no-isolate runs them in this process, for a "
         "debugger")]
TimeoutOpt = Annotated[float, typer.Option(
    "--timeout-s", callback=finite(low_open=True),
    help="seconds one version (peer, probe, configuration) may take on one case, compile included, before it is "
         "taken for hung and its worker killed")]


def project_paths(root: Path | None, logs: Path | None) -> tuple[Path, Path, Path]:
    """(project root, its kernels/, the records folder) from --root and --logs."""
    r = (root or find_repo_root()).resolve()
    return r, r / "kernels", (logs or r / "logs").resolve()


def os_reason(e: OSError) -> str:
    """Why an output could not be written, in words: a path through a file says so."""
    if isinstance(e, (FileExistsError, NotADirectoryError)):
        return "a part of the path is a file, not a folder"
    return str(e.strerror or e)


def fail(message: str, code: int = 2) -> None:
    """One line on stderr, then exit with ``code``; the message is printed as it is (a name or a path in
    it holding '[' is no markup)."""
    err.print(f"[bold red]error:[/bold red] {escape(message)}", highlight=False, markup=True)
    raise typer.Exit(code)


def user_errors() -> tuple[type[Exception], ...]:
    """The errors a command reports as one line (bad names, missing runs, bad records)."""
    from ..lookup import IterationError

    return (IterationError, AssignmentError, RecordError)
