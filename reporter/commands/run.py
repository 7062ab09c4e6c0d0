"""`report run`: check and time versions of an assignment on a CUDA GPU; write records under
logs/. ``--quick`` is the same check and timing loop for a look while working: at most 20 timed calls,
no rest, nothing written."""

from __future__ import annotations

from typing import Annotated

import typer

from ..assignments import AssignmentError, get_assignment
from ..harness.timing import COURSE_BUDGET_S, COURSE_TARGET_REL_STDERR, COURSE_WALL_S, MIN_REPS, MIN_SPAN_S
from ..store import RecordError
from .common import HoldOpt, IsolateOpt, LogsOpt, QuickOpt, RootOpt, TimeoutOpt, console, fail, finite, project_paths

NAME = "run"
EPILOG = ("Quick look while working: report run flashattn -v v15 -c benchmark --quick  ·  "
          "with the assignment's probes: report run histogram -c benchmark --probes")

#: what --quick changes: the most timed calls and the rest before each timing
QUICK_REPS = 20
FULL_REPS = 100
FULL_REST_S = 3.0


def command(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/, e.g. flashattn")],
    version: Annotated[list[str] | None, typer.Option("--version", "-v", help="version(s) to run (name or vNN); default all")] = None,
    case: Annotated[list[str] | None, typer.Option("--case", "-c", help="case(s) to run; default all")] = None,
    ranked: Annotated[bool, typer.Option(help="fresh input every repetition (seed += 13), every output re-checked")] = False,
    peers: Annotated[bool, typer.Option(help="time the assignment's peers in the same run")] = True,
    min_reps: Annotated[int | None, typer.Option(
        help="fewest timed repetitions before the standard error, the budget or the wall time may stop a run: what "
             "its statistics need (the course's harness stops after 3 at the earliest); 100 with --max-reps 100 "
             f"times every version over the same 100 calls [default: {MIN_REPS}, or --max-reps if fewer]",
        show_default=False)] = None,
    min_span_s: Annotated[float, typer.Option(callback=finite(), help=(
        "and the least time in seconds those calls take together, unless --max-reps come first: a card at its "
        "power cap dips about a second into back-to-back calls, and a run stopped before it reports a time "
        "nothing else reproduces"))] = MIN_SPAN_S,
    max_reps: Annotated[int | None, typer.Option(
        help=f"most timed repetitions, the course's 100 [default: {FULL_REPS}; --quick: {QUICK_REPS}]",
        show_default=False)] = None,
    budget_s: Annotated[float, typer.Option(callback=finite(low_open=True), help=(
        "stop once the timed calls of a version on a case add up to this many seconds (the course's rule: "
        "mean × runs)"))] = COURSE_BUDGET_S,
    wall_s: Annotated[float, typer.Option(callback=finite(low_open=True), help=(
        "stop once the repetitions of a version on a case have taken this many seconds of wall time (the "
        "course's limit)"))] = COURSE_WALL_S,
    target_rel_stderr: Annotated[float, typer.Option(callback=finite(), help=(
        "stop once the standard error falls under this fraction of the mean (the course's 0.1 %)"))]
        = COURSE_TARGET_REL_STDERR,
    warmup: Annotated[int, typer.Option(help="untimed calls before timing")] = 3,
    rest_s: Annotated[float | None, typer.Option(
        "--rest-s", callback=finite(), help="seconds of idle GPU before timing each version and peer (before each case's rounds when "
                         "interleaving), so each starts from a rested card as in a course harness; 0: no rest "
                         f"[default: {FULL_REST_S}; --quick: 0]", show_default=False)] = None,
    remeasure_ceilings: Annotated[bool, typer.Option(help="measure device ceilings again instead of reusing logs/devices/")] = False,
    profile: Annotated[bool, typer.Option("--profile", help="also profile one call of each checked version under Nsight Compute (ncu); slow")] = False,
    profile_timeout_s: Annotated[float, typer.Option(callback=finite(low_open=True), help="give up on one ncu profile after this many seconds")] = 1800.0,
    hold: HoldOpt = False,
    interleave: Annotated[bool, typer.Option(
        "--interleave/--sequential",
        help="--interleave: check everything, then time the versions and peers of each case together in rounds "
             "(one call of each per round, rotating order), so none runs on a cooler card than the others; "
             "ranked, each round's callables share one fresh input. Default: each timed on its own, peers first")] = False,
    probes: Annotated[bool, typer.Option(
        "--probes", help="also time the assignment's PROBES (pieces of a kernel timed alone, unchecked) on each "
                         "case, after its versions; kept in each run's record")] = False,
    quick: QuickOpt = False,
    isolate: IsolateOpt = True,
    timeout_s: TimeoutOpt = 300.0,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Check and time versions of an assignment on a CUDA GPU; write records under logs/."""
    from ..harness.device import NoGPU
    from ..harness.isolate import WorkerError
    from ..harness.jobs import RunOptions
    from ..harness.run import run
    from ..harness.timing import StoppingRule
    from ..render.text import TerminalEvents

    repo, kernels, logs_dir = project_paths(root, logs)
    try:
        a = get_assignment(kernels, assignment)
        versions = [a.version(v) for v in version] if version else a.versions()
        cases = list(case) if case else list(a.cases())
        for c in cases:
            a.case(c)
        # a version runs only the cases its CASES_WHERE keeps: skipped elsewhere, an error where both are named
        a.plan(versions, cases, named=bool(version and case))
        if probes and not getattr(a.spec, "PROBES", None):
            raise ValueError(f"--probes: {a.path / 'assignment.py'} defines no PROBES")
        most = max_reps if max_reps is not None else max(QUICK_REPS if quick else FULL_REPS, min_reps or 0)
        least = min_reps if min_reps is not None else min(MIN_REPS, most)
        if most < least:
            raise ValueError(f"--max-reps ({most}) is below --min-reps ({least})")
        rule = StoppingRule(min_reps=least, max_reps=most, budget_s=budget_s, wall_s=wall_s, min_span_s=min_span_s,
                            target_rel_stderr=target_rel_stderr, warmup_reps=warmup,
                            rest_s=rest_s if rest_s is not None else (0.0 if quick else FULL_REST_S))
        written = run(repo, logs_dir, a, versions, cases, RunOptions(ranked=ranked, rule=rule, peers=peers,
                                                                    remeasure_ceilings=remeasure_ceilings,
                                                                    profile=profile,
                                                                    profile_timeout_s=profile_timeout_s,
                                                                    hold=hold, interleave=interleave,
                                                                    probes=probes, write=not quick,
                                                                    isolate=isolate, timeout_s=timeout_s),
                      events=TerminalEvents(console, written=not quick))
    except NoGPU as e:
        fail(str(e), 3)
    except (AssignmentError, RecordError, ValueError, WorkerError) as e:
        fail(str(e))
    if quick:
        console.print("quick run: nothing written (run without --quick to keep records)")
    else:
        console.print(f"{len(written)} records written under {logs_dir / assignment}")
