"""`report sweep`: time every configuration of a tunable version; the sweep is recorded and shown in
the report."""

from __future__ import annotations

from typing import Annotated

import typer

from ..assignments import AssignmentError, get_assignment
from ..store import RecordError
from .common import HoldOpt, IsolateOpt, LogsOpt, QuickOpt, RootOpt, TimeoutOpt, console, fail, finite, project_paths

NAME = "sweep"


def command(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/")],
    version: Annotated[str, typer.Argument(help="a version that defines SWEEP and make_kernel(config)")],
    case: Annotated[str | None, typer.Option("--case", "-c", help="case to sweep on; default the version's headline "
                                                                   "case (the first benchmark case it runs)")] = None,
    max_reps: Annotated[int, typer.Option(help="most timed repetitions per configuration")] = 20,
    budget_s: Annotated[float, typer.Option(callback=finite(low_open=True), help="wall-time budget per configuration, seconds (interleaved: the sum for all)")] = 1.5,
    hold: HoldOpt = False,
    interleave: Annotated[bool, typer.Option(
        "--interleave/--sequential",
        help="time the configurations in rounds, one call of each per round in a rotating order, so the card's "
             "warming up cannot favour the first (default); --sequential times each to the end in SWEEP's order")] = True,
    quick: QuickOpt = False,
    isolate: IsolateOpt = True,
    timeout_s: TimeoutOpt = 300.0,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Time every configuration of a tunable version; the sweep is recorded and shown in the report."""
    from ..harness.device import NoGPU
    from ..harness.isolate import WorkerError
    from ..harness.run import sweep
    from ..harness.timing import StoppingRule
    from ..render.text import TerminalEvents

    repo, kernels, logs_dir = project_paths(root, logs)
    try:
        a = get_assignment(kernels, assignment)
        v = a.version(version)
        rule = StoppingRule(min_reps=3, max_reps=max_reps, budget_s=budget_s, wall_s=budget_s, warmup_reps=1, min_span_s=0)
        on = case or a.headline_case(v)
        if on is None:
            raise AssignmentError(f"{v.path}: CASES_WHERE {v.cases_where()!r} keeps none of the benchmark cases "
                                  f"({', '.join(a.benchmark_cases)}): name the case to sweep on with --case")
        path = sweep(repo, logs_dir, a, v, on, rule, hold=hold, interleave=interleave,
                     events=TerminalEvents(console), write=not quick, isolate=isolate, timeout_s=timeout_s)
    except NoGPU as e:
        fail(str(e), 3)
    except (AssignmentError, RecordError, ValueError, WorkerError) as e:
        fail(str(e))
    console.print(f"sweep written to {path}" if path else "quick sweep: nothing written")
