"""`report list`: every assignment and version with its latest run, per GPU: check, median,
speedups, date, profiled."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..render.tables import list_table
from .common import CaseOpt, GpuFilterOpt, LogsOpt, RootOpt, console, fail, project_paths, user_errors

if TYPE_CHECKING:
    from ..analysis.listing import ListRow

NAME = "list"


def command(
    assignment: Annotated[str | None, typer.Argument(help="one assignment; default all")] = None,
    case: CaseOpt = None,
    gpu: GpuFilterOpt = None,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Every assignment and version with its latest run, per GPU: check, median, speedups, date, profiled."""
    from ..analysis.listing import list_rows

    _, kernels, logs_dir = project_paths(root, logs)
    try:
        rows = list_rows(kernels, logs_dir, assignment, case, gpu)
    except user_errors() as e:
        fail(str(e))
        return
    if not rows:
        console.print(f"no assignments under {kernels} and no records under {logs_dir}")
        return
    tables: dict[tuple[str, str | None], list[ListRow]] = {}
    for row in rows:
        tables.setdefault((row.assignment, row.gpu), []).append(row)
    for group in tables.values():
        console.print(list_table(group, console.width))
