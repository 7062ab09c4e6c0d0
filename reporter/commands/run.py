"""`report run`: check and time versions of an assignment on a CUDA GPU; write records under
logs/."""

from __future__ import annotations

from typing import Annotated

import typer

from ..assignments import AssignmentError, get_assignment
from ..store import RecordError
from .common import HoldOpt, LogsOpt, RootOpt, console, fail, project_paths

NAME = "run"


def command(
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
    hold: HoldOpt = False,
    interleave: Annotated[bool, typer.Option(
        "--interleave/--sequential",
        help="--interleave: check everything, then time the versions and peers of each case together in rounds "
             "(one call of each per round, rotating order), so none runs on a cooler card than the others; "
             "ranked, each round's callables share one fresh input. Default: each timed on its own, peers first")] = False,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Check and time versions of an assignment on a CUDA GPU; write records under logs/."""
    from ..harness.device import NoGPU
    from ..harness.run import RunOptions, run
    from ..harness.timing import StoppingRule
    from ..render.text import TerminalEvents

    repo, kernels, logs_dir = project_paths(root, logs)
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
        fail(str(e), 3)
    except (AssignmentError, RecordError, ValueError) as e:
        fail(str(e))
    console.print(f"{len(written)} records written under {logs_dir / assignment}")
