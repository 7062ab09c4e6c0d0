"""`report new`: scaffold the next version from the previous one (or a new assignment folder) and
its worklog section."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import RootOpt, console, fail, project_paths, user_errors

NAME = "new"


def command(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/ (created with a template if missing)")],
    version: Annotated[str, typer.Argument(help="the new version's name, vNN_slug, e.g. v04_vectorized_loads")],
    from_version: Annotated[str | None, typer.Option(
        "--from", help="version to copy (name or vNN); default the highest-numbered")] = None,
    from_task: Annotated[Path | None, typer.Option(
        "--from-task", metavar="FOLDER",
        help="a new assignment over a course problem folder in the CS149 / GPU MODE format (reference.py, "
             "task.py, test_cases/test.txt), loaded from there at run time: its inputs, cases and check")] = None,
    benchmark_line: Annotated[int | None, typer.Option(
        "--benchmark-line", metavar="N", help="with --from-task: the 0-based line of the test file that is the "
                                             "benchmark case (default the last)")] = None,
    root: RootOpt = None,
) -> None:
    """Scaffold the next version from the previous one (or a new assignment folder) and its worklog section."""
    from ..scaffold import PLACEHOLDER, plan_new, write_plan

    repo, kernels, _ = project_paths(root, None)
    if benchmark_line is not None and from_task is None:
        fail("--benchmark-line goes with --from-task")
    try:
        plan = plan_new(kernels, assignment, version, from_version, from_task, benchmark_line)
        written = write_plan(plan)
    except user_errors() as e:
        fail(str(e))
        return
    if plan.new_assignment and from_task is not None:
        console.print(f"new assignment [bold]{assignment}[/bold] in {kernels / assignment}, over the course "
                      f"problem in {from_task} (loaded from there at run time)", highlight=False)
    elif plan.new_assignment:
        console.print(f"new assignment [bold]{assignment}[/bold] in {kernels / assignment}")
    elif plan.source_version:
        console.print(f"[bold]{version}[/bold]: {plan.source_version}'s Python with a fresh docstring"
                      + (", its CUDA built on the parent's by an include" if any(
                          f.path.suffix == ".cu" for f in plan.files) else ""), highlight=False)
    if plan.moved_header:
        console.print(f"{plan.source_version}'s CUDA code moved into {plan.moved_header} unchanged (its .cu now "
                      f"includes it): run [bold]report same-code {assignment} -v {plan.source_version}[/bold] to "
                      f"prove it compiles to what its records ran, so its figures stand", highlight=False)
    for path in written:
        verb = "created" if any(f.path == path and f.create for f in plan.files) else "updated"
        console.print(f"  {verb} {_rel(path, repo)}", highlight=False)
    console.print(f"Edit every part marked [bold]{PLACEHOLDER}[/bold]: the docstring says how the code is "
                  f"structured, the worklog section why this version exists. Then: report run {assignment} "
                  f"--version {version.split('_')[0]}", highlight=False)


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)
