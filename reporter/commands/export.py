"""`report export`: write one self-contained submission.py with custom_kernel(data), for a course
harness. No GPU needed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from ..assignments import AssignmentError, get_assignment
from ..export import ExportFormat
from ..store import RecordError
from .common import LogsOpt, RootOpt, console, fail, project_paths

NAME = "export"


def command(
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

    from ..export import ExportError, export

    repo, kernels, logs_dir = project_paths(root, logs)
    try:
        a = get_assignment(kernels, assignment)
        v = a.version(version)
        # absolute, not resolved: a symbolic link named by -o is refused, not written through
        result = export(repo, logs_dir, a, v, Path(os.path.abspath(output)) if output else None, force=force)
    except (AssignmentError, RecordError, ExportError) as e:
        fail(str(e))
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
        note = f" ({m.code.words()})" if m.code.state != "current" else ""
        console.print(f"measured: {m.run.timing.mean_ms:.4g} ms (the version's figure) on {m.run.device.name}{note}",
                      highlight=False, markup=False, soft_wrap=True)
    console.print(f"use: put it beside the {fmt.harness} harness as submission.py; the harness imports it and "
                  "calls custom_kernel(data)", highlight=False, soft_wrap=True)
    console.print(f"     it needs {', '.join(done.requires) or 'only Python'} there, nothing from this repository; "
                  f"try: cd {shlex.quote(str(shown.parent))} && python -c 'import submission'", highlight=False, soft_wrap=True,
                  markup=False)
