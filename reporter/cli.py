"""The `report` command: one module per command under :mod:`reporter.commands`, assembled here.

Each command module holds one typer function (``command``) and its name (``NAME``); the options
every command shares (--root, --logs, --case, --gpu) and the way a command fails are declared once
in :mod:`reporter.commands.common`. Commands import the harness, the analysis and the renderers
inside their bodies, so a GPU node with only torch, cupy, pydantic, typer and rich can run
`report run`, and `report diff` answers without importing scipy, matplotlib or torch.
"""

from __future__ import annotations

import sys
import warnings

import typer
from rich.markup import escape

from .assignments import AssignmentError
from .commands import (build, ceilings, crosscheck, device, diff, export, history, list_, merge, migrate, new, reverify,
                       run, same_code, show, solutions, sweep)
from .commands.common import err
from .store import RecordError, RecordSkipped

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="rich",
                  help="GPU performance work logs: run kernels under a measuring harness, "
                       "build the hand-in report, diff iterations.")

_said: set[str] = set()
_plain_showwarning = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A record a command left out: one line on stderr, once per file and command."""
    if not issubclass(category, RecordSkipped):
        _plain_showwarning(message, category, filename, lineno, file, line)
        return
    text = str(message)
    if text not in _said:
        _said.add(text)
        err.print(f"[yellow]warning:[/yellow] {text}", highlight=False)


@app.callback()
def _setup() -> None:
    _said.clear()  # once per file and command
    warnings.showwarning = _show_warning
    warnings.simplefilter("always", RecordSkipped)


for _module in (run, sweep, crosscheck, ceilings, device, build, export, new, list_, show, diff, history, reverify,
                same_code, solutions, migrate, merge):
    app.command(_module.NAME, epilog=getattr(_module, "EPILOG", None))(_module.command)


def main() -> None:  # console-script entry point
    try:
        app()
    except (AssignmentError, RecordError) as e:
        err.print(f"[bold red]error:[/bold red] {escape(str(e))}", highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
