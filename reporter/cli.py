"""The `report` command: thin typer commands over the harness, the analysis and the renderers.

Render-side modules are imported inside the commands that need them, so a GPU node with
only torch, cupy, nvtx, pydantic, typer and rich can run `report run`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from .assignments import AssignmentError, find_repo_root, get_assignment
from .export import ExportFormat
from .store import RecordError

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="rich",
                  help="GPU performance work logs: run kernels under a measuring harness, "
                       "build the hand-in report, diff iterations.")
console = Console()
err = Console(stderr=True, soft_wrap=True)

RootOpt = Annotated[Path | None, typer.Option("--root", help="project root (holds kernels/ and logs/); default: found upwards from here")]
LogsOpt = Annotated[Path | None, typer.Option("--logs", help="records folder; default: <root>/logs")]


def _paths(root: Path | None, logs: Path | None) -> tuple[Path, Path, Path]:
    r = (root or find_repo_root()).resolve()
    return r, r / "kernels", (logs or r / "logs").resolve()


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/bold red] {message}", highlight=False)
    raise typer.Exit(code)


@app.command("run")
def run_cmd(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/, e.g. flashattn")],
    version: Annotated[list[str] | None, typer.Option("--version", "-v", help="version(s) to run (name or vNN); default all")] = None,
    case: Annotated[list[str] | None, typer.Option("--case", "-c", help="case(s) to run; default all")] = None,
    ranked: Annotated[bool, typer.Option(help="fresh input every repetition (seed += 13), every output re-checked")] = False,
    peers: Annotated[bool, typer.Option(help="time the assignment's peers in the same run")] = True,
    min_reps: Annotated[int, typer.Option(
        help="fewest timed repetitions: with the default 100 (= --max-reps) every figure spans the same window, "
             "the course harness's 100 calls; a card at its power cap dips about a second into back-to-back "
             "calls, so a run stopped after a few calls on a rested card reports a time nobody reproduces")] = 100,
    max_reps: Annotated[int, typer.Option(help="most timed repetitions")] = 100,
    budget_s: Annotated[float, typer.Option(help="wall-time budget per version and case, seconds")] = 10.0,
    target_rel_stderr: Annotated[float, typer.Option(help="stop once stderr/mean falls under this")] = 1e-3,
    warmup: Annotated[int, typer.Option(help="untimed calls before timing")] = 3,
    rest_s: Annotated[float, typer.Option(
        "--rest-s", help="seconds of idle GPU before timing each version and peer (before each case's rounds when "
                         "interleaving), so each starts from a rested card as in a course harness; 0: no rest")] = 3.0,
    remeasure_ceilings: Annotated[bool, typer.Option(help="measure device ceilings again instead of reusing logs/devices/")] = False,
    profile: Annotated[bool, typer.Option("--profile", help="also profile one call of each checked version under Nsight Compute (ncu); slow")] = False,
    profile_timeout_s: Annotated[float, typer.Option(help="give up on one ncu profile after this many seconds")] = 1800.0,
    hold: Annotated[bool, typer.Option("--hold", help="hold the stream until each timed call is queued, so host launch time stays out of the samples (method cuda-events+hold)")] = False,
    interleave: Annotated[bool, typer.Option(
        "--interleave/--sequential",
        help="--interleave: check everything, then time the versions and peers of each case together in rounds "
             "(one call of each per round, rotating order), so none runs on a cooler card than the others; "
             "ranked, each round's callables share one fresh input. Default: each timed on its own, peers first")] = False,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Check and time versions of an assignment on a CUDA GPU; write records under logs/."""
    from .harness.device import NoGPU
    from .harness.run import RunOptions, run
    from .harness.timing import StoppingRule
    from .render.text import TerminalEvents

    repo, kernels, logs_dir = _paths(root, logs)
    try:
        a = get_assignment(kernels, assignment)
        versions = [a.version(v) for v in version] if version else a.versions()
        cases = list(case) if case else list(a.cases())
        for c in cases:
            a.case(c)
        rule = StoppingRule(min_reps=min_reps, max_reps=max_reps, budget_s=budget_s,
                            target_rel_stderr=target_rel_stderr, warmup_reps=warmup, rest_s=rest_s)
        written = run(repo, logs_dir, a, versions, cases, RunOptions(ranked=ranked, rule=rule, peers=peers,
                                                                    remeasure_ceilings=remeasure_ceilings,
                                                                    profile=profile,
                                                                    profile_timeout_s=profile_timeout_s,
                                                                    hold=hold, interleave=interleave), console,
                      events=TerminalEvents(console))
    except NoGPU as e:
        _fail(str(e), 3)
    except (AssignmentError, RecordError, ValueError) as e:
        _fail(str(e))
    console.print(f"{len(written)} records written under {logs_dir / assignment}")


@app.command("sweep")
def sweep_cmd(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/")],
    version: Annotated[str, typer.Argument(help="a version that defines SWEEP and make_kernel(config)")],
    case: Annotated[str | None, typer.Option("--case", "-c", help="case to sweep on; default the benchmark case")] = None,
    max_reps: Annotated[int, typer.Option(help="most timed repetitions per configuration")] = 20,
    budget_s: Annotated[float, typer.Option(help="wall-time budget per configuration, seconds (interleaved: the sum for all)")] = 1.5,
    hold: Annotated[bool, typer.Option("--hold", help="hold the stream until each timed call is queued (see `report run --help`)")] = False,
    interleave: Annotated[bool, typer.Option(
        "--interleave/--sequential",
        help="time the configurations in rounds, one call of each per round in a rotating order, so the card's "
             "warming up cannot favour the first (default); --sequential times each to the end in SWEEP's order")] = True,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Time every configuration of a tunable version; the sweep is recorded and shown in the report."""
    from .harness.device import NoGPU
    from .harness.run import sweep
    from .harness.timing import StoppingRule
    from .render.text import TerminalEvents

    repo, kernels, logs_dir = _paths(root, logs)
    try:
        a = get_assignment(kernels, assignment)
        v = a.version(version)
        rule = StoppingRule(min_reps=3, max_reps=max_reps, budget_s=budget_s, warmup_reps=1)
        path = sweep(repo, logs_dir, a, v, case or a.benchmark_case, rule, console, hold=hold, interleave=interleave,
                     events=TerminalEvents(console))
    except NoGPU as e:
        _fail(str(e), 3)
    except (AssignmentError, RecordError, ValueError) as e:
        _fail(str(e))
    console.print(f"sweep written to {path}")


@app.command("crosscheck")
def crosscheck_cmd(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/, e.g. flashattn")],
    version: Annotated[str, typer.Argument(help="version name or vNN")],
    peer: Annotated[list[str] | None, typer.Option(
        "--peer", "-p",
        help="also submit this peer to the course harness (through a shim), ABBA with the version")] = None,
    course_root: Annotated[Path | None, typer.Option(
        "--course-root", help="a checkout of the course's repository (default <root>/.course/<its name>)")] = None,
    no_course: Annotated[bool, typer.Option("--no-course",
                                            help="skip the course harness: do_bench and ours only")] = False,
    rest_s: Annotated[float, typer.Option("--rest-s", help="seconds of idle GPU before each of our timings and "
                                                           "each do_bench call")] = 3.0,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Time a version by the course's own harness (its eval.py, test and benchmark, on the export), by
    triton's do_bench and by ours, in one session; record all three. Needs a GPU."""
    from .export import render as render_export
    from .harness.crosscheck import CrossCheckError, CrossCheckOptions, crosscheck, require_course_root
    from .harness.device import NoGPU, device_info, require_cuda
    from .harness.run import RunOptions, run
    from .harness.timing import CudaEventTimer, StoppingRule
    from .render.text import TerminalEvents

    repo, kernels, logs_dir = _paths(root, logs)
    try:
        a = get_assignment(kernels, assignment)
        v = a.version(version)
        root_dir = None if no_course else require_course_root(a, course_root, repo)
        require_cuda()
        info = device_info()
        timer = CudaEventTimer()

        def ours(cases: list[str]) -> list[Path]:
            return run(repo, logs_dir, a, [v], cases,
                       RunOptions(rule=StoppingRule(min_reps=100, rest_s=rest_s), peers=True),
                       console, events=TerminalEvents(console, blocks=False))

        submission = render_export(repo, logs_dir, a, v).text if root_dir is not None else None
        path, check = crosscheck(repo, logs_dir, a, v, CrossCheckOptions(course_root=root_dir, peers=peer or (),
                                                                           rest_s=rest_s),
                                 submission=submission, run_ours=ours, do_bench=_do_bench_median, info=info, rest=timer.rest,
                                 say=lambda s: console.print(s, highlight=False, markup=False))
    except NoGPU as e:
        _fail(str(e), 3)
        return
    except (AssignmentError, RecordError, CrossCheckError, ValueError) as e:
        _fail(str(e))
        return
    from .analysis.crosscheck import runs_of

    console.print(_agreement_table(check, runs_of(check, logs_dir)))
    console.print(f"cross-check written to {path}")


def _agreement_table(check, runs=None):  # type: ignore[no-untyped-def]
    from rich.table import Table

    from .analysis.crosscheck import AGREEMENT_PCT, agreements
    from .analysis.diff import format_ms

    t = Table(title=f"{check.assignment} {check.version} on {check.device.name}: three timers, one session",
              title_justify="left", box=None, header_style="bold", pad_edge=False,
              caption="course runs that stopped early (its standard-error rule) are set against our mean over "
                      "as many first calls", caption_justify="left")
    for col in ("callable", "case", "ours (mean)", "course harness (mean, calls)", "do_bench (median)", "course test",
                f"within {AGREEMENT_PCT:g} %"):
        t.add_column(col, justify="left" if col in ("callable", "case") else "right")

    def gap(x, ref):  # type: ignore[no-untyped-def]
        return f" ({(x / ref - 1) * 100:+.1f} %)" if x is not None and ref else ""

    for ag in agreements(check, runs):
        course = "\n".join(f"{format_ms(mean)} [{n or '?'}]{gap(mean, ours)}"
                           + ("" if ours is ag.ours_ms or ours is None else f" vs {format_ms(ours)}")
                           for (mean, ours, _), n in zip(ag.course_pairs(), ag.course_calls or [None] * 9)) or "—"
        t.add_row(("peer " if ag.peer else "") + ag.name, ag.case,
                  (format_ms(ag.ours_ms) + (f" [{ag.ours_calls}]" if ag.ours_calls else "")) if ag.ours_ms else "—",
                  course, (format_ms(ag.do_bench_ms) if ag.do_bench_ms else "—") + gap(ag.do_bench_ms, ag.ours_ms),
                  {True: "pass", False: "FAIL", None: "—"}[ag.course_passed],
                  {True: "yes", False: "NO", None: "—"}[ag.agrees])
    return t


def _do_bench_median(fn, data) -> float:  # type: ignore[no-untyped-def]
    import torch
    import triton.testing

    from .harness.crosscheck import DO_BENCH_REP_MS, DO_BENCH_WARMUP_MS

    fn(data)
    torch.cuda.synchronize()
    return float(triton.testing.do_bench(lambda: fn(data), warmup=DO_BENCH_WARMUP_MS, rep=DO_BENCH_REP_MS,
                                         return_mode="median"))


@app.command("ceilings")
def ceilings_cmd(root: RootOpt = None, logs: LogsOpt = None) -> None:
    """Measure this GPU's copy bandwidth and matmul peaks; store them under logs/devices/."""
    from .harness.device import NoGPU, device_info
    from .harness.run import ensure_ceilings

    _, _, logs_dir = _paths(root, logs)
    try:
        ensure_ceilings(logs_dir, device_info(), console, remeasure=True)
    except NoGPU as e:
        _fail(str(e), 3)


@app.command("build")
def build_cmd(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/, e.g. flashattn")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="output folder; default reports/<assignment>")] = None,
    gpu: Annotated[str | None, typer.Option(help="GPU label of the records to use (e.g. h100); default the newest")] = None,
    pdf: Annotated[bool, typer.Option(help="also write the PDF (WeasyPrint)")] = True,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Build the hand-in report (HTML and PDF) from the records and worklog.md. No GPU needed."""
    import time

    from .analysis.summary import SummaryError
    from .render.report import build
    from .render.worklog import WorklogError

    t0 = time.perf_counter()
    repo, kernels, logs_dir = _paths(root, logs)
    out_dir = (out or repo / "reports" / assignment).resolve()
    try:
        a = get_assignment(kernels, assignment)
        with console.status(f"building the {assignment} report"):
            result = build(a, repo, logs_dir, out_dir, gpu=gpu, pdf=pdf)
    except (AssignmentError, RecordError, SummaryError, WorklogError) as e:
        _fail(str(e))
    console.print(f"HTML: {result.html}")
    if result.pdf:
        console.print(f"PDF:  {result.pdf} ({result.pages} pages)")
    elif result.pdf_error:
        err.print(f"[yellow]warning:[/yellow] {result.pdf_error}")
    console.print(f"[dim]built in {time.perf_counter() - t0:.2f} s[/dim]")
    if result.pdf_error:
        raise typer.Exit(1)


@app.command("export")
def export_cmd(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/, e.g. flashattn")],
    version: Annotated[str, typer.Argument(help="version name or vNN")],
    fmt: Annotated[ExportFormat, typer.Option(
        "--format", "-f", help="cs149: a submission.py for the CS149 harness; gpumode: the same file "
                               "(CS149's harness is modelled on GPU MODE's eval.py)")] = ExportFormat.cs149,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="the .py file to write, or a folder to write submission.py in; "
                               "default exports/<assignment>/<version>/submission.py")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="replace an existing file that differs from this export")] = False,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Write one self-contained submission.py with custom_kernel(data), for a course harness. No GPU needed."""
    import shlex

    from .export import ExportError, export

    repo, kernels, logs_dir = _paths(root, logs)
    try:
        a = get_assignment(kernels, assignment)
        v = a.version(version)
        result = export(repo, logs_dir, a, v, output.resolve() if output else None, force=force)
    except (AssignmentError, RecordError, ExportError) as e:
        _fail(str(e))
        return
    try:
        shown = result.path.relative_to(Path.cwd())
    except ValueError:
        shown = result.path
    done = result.export
    if result.status == "unchanged":
        console.print(f"{shown} is up to date (only its export date would change): left as it is",
                      highlight=False, soft_wrap=True, markup=False)
    else:
        console.print(f"{result.status} {shown}: {a.name} {v.name}, {len(done.files)} embedded files",
                      highlight=False, soft_wrap=True, markup=False)
    if done.measured and done.measured[0].run.timing:
        m = done.measured[0]
        note = "" if m.same_code else " (on earlier code: the sources changed since)"
        console.print(f"measured: {m.run.timing.mean_ms:.4g} ms (the version's figure) on {m.run.device.name}{note}",
                      highlight=False, markup=False, soft_wrap=True)
    console.print(f"use: put it beside the {fmt.harness} harness as submission.py; the harness imports it and "
                  "calls custom_kernel(data)", highlight=False, soft_wrap=True)
    console.print(f"     it needs {', '.join(done.requires) or 'only Python'} there, nothing from this repository; "
                  f"try: cd {shlex.quote(str(shown.parent))} && python -c 'import submission'", highlight=False, soft_wrap=True,
                  markup=False)


from .cli_iteration import register as _register_iteration; _register_iteration(app)  # noqa: E402, E702
from .cli_reverify import register as _register_reverify; _register_reverify(app)  # noqa: E402, E702


def main() -> None:  # console-script entry point
    try:
        app()
    except (AssignmentError, RecordError) as e:
        err.print(f"[bold red]error:[/bold red] {e}", highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
