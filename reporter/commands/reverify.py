"""`report reverify`: prove on the card that a rewrite left a version's behaviour and time alone.

    git worktree add /tmp/before <commit before the rewrite>
    (cd /tmp/before && PYTHONPATH=. python -m reporter.cli export flashattn v14 -o /tmp/exports/v14_multicast/submission.py)
    report reverify flashattn -v v14 --before-dir /tmp/exports

For each case: the version as it is now and the earlier export are each checked, then timed
interleaved in rounds; ``report diff``'s verdict (:func:`reporter.analysis.diff.compare_timing`)
between the two is recorded with both runs under ``logs/<assignment>/<version>/reverify/``, and
the run of the version as it is now is also kept as an ordinary (interleaved) run record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..assignments import AssignmentError, get_assignment
from ..render.tables import reverify_table
from ..store import RecordError
from .common import LogsOpt, RootOpt, console, fail, finite, project_paths

NAME = "reverify"


def command(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/, e.g. flashattn")],
    version: Annotated[list[str], typer.Option("--version", "-v", help="version(s) to re-verify (name or vNN)")],
    before_dir: Annotated[Path, typer.Option(
        "--before-dir", help="folder holding <version name>/submission.py: each version exported (`report export`) "
                             "at the commit before the rewrite")],
    case: Annotated[list[str] | None, typer.Option("--case", "-c", help="case(s); default all")] = None,
    min_reps: Annotated[int, typer.Option(help="fewest timed rounds")] = 100,
    max_reps: Annotated[int, typer.Option(help="most timed rounds")] = 100,
    budget_s: Annotated[float, typer.Option(callback=finite(low_open=True), help="stop once a callable's timed calls on a case add up to this many seconds")] = 10.0,
    warmup: Annotated[int, typer.Option(help="untimed rounds first")] = 3,
    rest_s: Annotated[float, typer.Option("--rest-s", callback=finite(), help="seconds of idle GPU before each pair's rounds")] = 3.0,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Time versions against their exports from before a rewrite, interleaved; record report diff's verdict."""
    from .. import store
    from ..analysis.diff import compare_timing
    from ..harness.device import NoGPU
    from ..harness.jobs import RunOptions
    from ..harness.reverify import ReverifyError, reverify
    from ..harness.timing import StoppingRule
    from ..records import Reverification, ReverifyCase
    from ..render.text import TerminalEvents

    repo, kernels, logs_dir = project_paths(root, logs)
    try:
        a = get_assignment(kernels, assignment)
        versions = [a.version(v) for v in version]
        cases = list(case) if case else list(a.cases())
        for c in cases:
            a.case(c)
        a.plan(versions, cases, named=bool(case))  # a named case that a version's CASES_WHERE leaves out
        befores = {}
        for v in versions:
            p = before_dir / v.name / "submission.py"
            if not p.is_file():
                fail(f"--before-dir: {p} does not exist (export {v.name} at the earlier commit into "
                      f"{before_dir / v.name}/submission.py)")
            befores[v.name] = p
        rule = StoppingRule(min_reps=min_reps, max_reps=max_reps, budget_s=budget_s, target_rel_stderr=1e-3,
                            warmup_reps=warmup, rest_s=rest_s)
        results = reverify(repo, logs_dir, a, versions, befores, cases, RunOptions(rule=rule), TerminalEvents(console))
    except NoGPU as e:
        fail(str(e), 3)
    except (AssignmentError, RecordError, ReverifyError, ValueError) as e:
        fail(str(e))

    by_version: dict[str, list[ReverifyCase]] = {}
    for res in results:
        verdict = compare_timing(res.before.timing, res.after.timing) \
            if res.before.timing is not None and res.after.timing is not None else None
        problem = res.after.error or res.before.error
        by_version.setdefault(res.version, []).append(ReverifyCase(
            case_name=res.case_name, after=res.after, before=res.before,
            verdict=verdict.verdict if verdict else None,
            summary=verdict.sentence if verdict else f"not timed: {problem or 'no timing'}"))
        if res.after.timing is not None:
            store.save(res.after, store.run_path(logs_dir, res.after), logs=logs_dir)
    failed = False
    for v in versions:
        rows = by_version.get(v.name, [])
        first = rows[0].after if rows else None
        if first is None:
            continue
        rv = Reverification(run_id=f"{first.session_id}_{first.device.slug}", session_id=first.session_id,
                            assignment=a.name, version=v.name, created_utc=first.created_utc, device=first.device,
                            command=first.command, before_export=str(befores[v.name]),
                            before_export_sha256=_sha256(befores[v.name]),
                            before_commit=rows[0].before.code.git_commit, cases=rows)
        path = store.save(rv, store.reverification_path(logs_dir, rv), logs=logs_dir)
        failed |= not rv.same
        console.print(f"{v.name}: {'same within noise on every case' if rv.same else 'NOT the same'} -> {path}",
                      highlight=False, markup=False)
    console.print(reverify_table(by_version))
    if failed:
        raise typer.Exit(1)



def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()
