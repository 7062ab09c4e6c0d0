"""`report crosscheck`: time a version by the course's own harness (its eval.py, test and benchmark,
on the export), by triton's do_bench and by ours, in one session; record all three. Needs a GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..assignments import AssignmentError, get_assignment
from ..render.tables import agreement_table
from ..store import RecordError
from .common import LogsOpt, RootOpt, console, fail, finite, project_paths

NAME = "crosscheck"


def command(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/, e.g. flashattn")],
    version: Annotated[str, typer.Argument(help="version name or vNN")],
    peer: Annotated[list[str] | None, typer.Option(
        "--peer", "-p",
        help="also submit this peer to the course harness (through a shim), ABBA with the version")] = None,
    course_root: Annotated[Path | None, typer.Option(
        "--course-root", help="a checkout of the course's repository (default <root>/.course/<its name>)")] = None,
    no_course: Annotated[bool, typer.Option("--no-course",
                                            help="skip the course harness: do_bench and ours only")] = False,
    case: Annotated[list[str] | None, typer.Option(
        "--case", "-c", help="with --no-course: the case(s) to time (default the benchmark case)")] = None,
    rest_s: Annotated[float, typer.Option("--rest-s", callback=finite(), help="seconds of idle GPU before each of our timings and "
                                                           "each do_bench call")] = 3.0,
    do_bench_rep_ms: Annotated[float, typer.Option(
        "--do-bench-rep-ms", callback=finite(),
        help="do_bench's repetition budget a call, milliseconds (triton's default 100; a card at its power cap "
             "settles about a second into back-to-back calls)")] = 100.0,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Time a version by the course's own harness (its eval.py, test and benchmark, on the export), by
    triton's do_bench and by ours, in one session; record all three. Needs a GPU."""
    from ..export import render as render_export
    from ..harness.crosscheck import (CrossCheckError, CrossCheckOptions, check_options, crosscheck,
                                      require_course_root)
    from ..harness.device import NoGPU, device_info, require_cuda
    from ..harness.isolate import WorkerError
    from ..harness.jobs import RunOptions
    from ..harness.run import run
    from ..harness.timing import CudaEventTimer, StoppingRule
    from ..render.text import TerminalEvents

    repo, kernels, logs_dir = project_paths(root, logs)
    try:
        a = get_assignment(kernels, assignment)
        v = a.version(version)
        root_dir = None if no_course else require_course_root(a, course_root, repo)
        opts = CrossCheckOptions(course_root=root_dir, peers=peer or (), rest_s=rest_s, cases=case or (),
                                 do_bench_rep_ms=do_bench_rep_ms)
        check_options(a, opts)
        require_cuda()
        info = device_info()
        timer = CudaEventTimer()

        def ours(cases: list[str]) -> list[Path]:
            return run(repo, logs_dir, a, [v], cases,
                       RunOptions(rule=StoppingRule(rest_s=rest_s), peers=True),
                       events=TerminalEvents(console, blocks=False))

        submission = render_export(repo, logs_dir, a, v).text if root_dir is not None else None
        path, check = crosscheck(repo, logs_dir, a, v, opts,
                                 submission=submission, run_ours=ours, do_bench=_do_bench_median, info=info, rest=timer.rest,
                                 events=TerminalEvents(console, blocks=False))
    except NoGPU as e:
        fail(str(e), 3)
        return
    except (AssignmentError, RecordError, CrossCheckError, ValueError, WorkerError) as e:
        fail(str(e))
        return
    from ..analysis.crosscheck import runs_of

    console.print(agreement_table(check, runs_of(check, logs_dir)))
    console.print(f"cross-check written to {path}")



def _do_bench_median(fn, data, rep_ms) -> float:  # type: ignore[no-untyped-def]
    import torch
    import triton.testing

    from ..harness.crosscheck import DO_BENCH_WARMUP_MS

    fn(data)
    torch.cuda.synchronize()
    return float(triton.testing.do_bench(lambda: fn(data), warmup=DO_BENCH_WARMUP_MS, rep=rep_ms,
                                         return_mode="median"))
