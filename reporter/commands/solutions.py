"""`report solutions`: a course folder's own solutions (GPU MODE's ``solutions/correct`` and
``solutions/wrong``) through its own check, on the test cases: the test of the check itself."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from ..assignments import AssignmentError, get_assignment
from .common import RootOpt, console, fail, project_paths

NAME = "solutions"
EPILOG = "A GPU MODE problem imported with report new NAME v01_x --from-task PATH: report solutions NAME"


def command(
    assignment: Annotated[str, typer.Argument(help="an assignment over a course folder (report new --from-task)")],
    case: Annotated[list[str] | None, typer.Option("--case", "-c", help="case(s); default every test case")] = None,
    root: RootOpt = None,
) -> None:
    """Run the course folder's solutions/correct and solutions/wrong through its check on the test cases: each
    correct one must pass every case and each wrong one fail at least one. Exit 1 when one does not."""
    from ..course import CourseTask
    from ..harness.solutions import check_solutions, solution_files

    _, kernels, _ = project_paths(root, None)
    try:
        a = get_assignment(kernels, assignment)
        if a.task_folder is None:
            raise AssignmentError(f"{a.path / 'assignment.py'}: not over a course folder (no TASK_DIR): it has no "
                                  "solutions of the course's")
        task = CourseTask(a.task_folder)
        if not solution_files(task.require()):
            raise AssignmentError(f"{task.folder}: no solutions/correct/*.py or solutions/wrong/*.py there")
        every = task.cases
        names = list(case) if case else [n for n in every if n.startswith("test_")] or list(every)
        for n in names:
            if n not in every:
                raise AssignmentError(f"--case: no case '{n}' (have: {', '.join(every)})")
        results = check_solutions(task, {n: every[n] for n in names})
    except AssignmentError as e:
        fail(str(e))
        return
    table = Table("solution", "must", *names, "as it must", box=None, pad_edge=False)
    for r in results:
        marks = [verdict for _, verdict, _ in r.cases]
        table.add_row(r.path.relative_to(task.folder).as_posix(), "pass all" if r.kind == "correct" else "fail one",
                      *marks, "yes" if r.as_expected else "[bold red]NO[/bold red]")
    console.print(table)
    for r in results:
        for name, verdict, message in r.cases:
            if message and (verdict == "error" or (verdict == "fail" and r.kind == "correct")):
                console.print(f"  {r.path.name} on {name}: {verdict}: {message}", markup=False, highlight=False)
    wrong = [r for r in results if not r.as_expected]
    if wrong:
        console.print(f"[bold red]{len(wrong)} of {len(results)} solutions are not judged as they must be[/bold red]: "
                      + ", ".join(r.path.name for r in wrong))
        raise typer.Exit(1)
    console.print(f"the check passes every correct solution and fails every wrong one ({len(results)} solutions, "
                  f"{len(names)} cases)")
