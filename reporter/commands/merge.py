"""`report merge`: bring the records a device session shipped back (a .tgz or a folder) into logs/."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import LogsOpt, RootOpt, console, err, fail, project_paths

NAME = "merge"


def command(
    shipped: Annotated[list[Path], typer.Argument(help="what a session shipped back: tools/gpu_session.sh's "
                                                       "new_logs.tgz, or a folder laid out like logs/")],
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Bring the records a device session shipped back into logs/: each source text checked against its
    name, each record loaded and its texts found, nothing already here overwritten. Merging the same
    files twice changes nothing."""
    from .. import store
    from ..merge import MergeError, merge

    _, _, logs_dir = project_paths(root, logs)
    failed = False
    for source in shipped:
        if not source.exists():
            fail(f"{source}: no such file or folder")
        try:
            out = merge(source, logs_dir)
        except MergeError as e:
            fail(str(e))
            return
        for rel, why in out.refused:
            err.print(f"[bold red]refused:[/bold red] {rel}: {why}", highlight=False)
        for rel, why in out.conflicts:
            err.print(f"[yellow]conflict:[/yellow] logs/{rel}: {why}", highlight=False)
        records = sum(1 for rel in out.added if store.is_record_name(rel))
        counted = f"{records} record{'' if records == 1 else 's'}"
        console.print(f"{source}: {len(out.added)} files added ({counted}), {len(out.unchanged)} already here, "
                      f"{len(out.conflicts)} conflicts, {len(out.refused)} refused", highlight=False)
        failed |= not out.ok
    if failed:
        raise typer.Exit(1)
