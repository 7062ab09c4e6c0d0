"""`report migrate`: rewrite every record under logs/ in the current layout, losslessly (each file
read back and compared before it replaces the old one); the source texts go to logs/sources/, each
gzip-compressed (a plain blob of an older store is rewritten as <sha256>.gz)."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import LogsOpt, RootOpt, console, err, project_paths

NAME = "migrate"


def command(
    check: Annotated[bool, typer.Option(
        "--check", help="change nothing: list the records not in the current layout, count the source texts not "
                        "compressed, and exit 1 if there are any")] = False,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Rewrite every record under logs/ in the current layout (one line, source texts in logs/sources/,
    per-sample arrays packed, the file gzip-compressed as X.json.gz) and every plain source text as
    <sha256>.gz. Each file is read back and compared with the old record, field by field,
    sample by sample and text by text, before it replaces it; a second run changes nothing."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .. import packed, sources, store
    from ..migrate import is_current, is_record, migrate, probe_attachments, record_files

    _, _, logs_dir = project_paths(root, logs)
    files = record_files(logs_dir)
    if check:
        stale, broken = [], 0
        attached = probe_attachments(files)
        records = [p for p in files if p not in attached and is_record(p)]
        for p in records:
            try:
                record = store.load(p)
                packed.decode_all(record)
                if not is_current(p, record):
                    stale.append(p)
            except (store.RecordError, packed.PackedArrayError) as e:
                err.print(f"[yellow]warning:[/yellow] {e}", highlight=False)
                broken += 1
        for p in stale:
            console.print(f"not in the current layout: {p.relative_to(logs_dir)}", highlight=False)
        plain = sources.plain_blobs(logs_dir)
        console.print(f"{len(records) - len(stale) - broken} of {len(records)} records in the current layout"
                      + (f", {broken} that do not read" if broken else "")
                      + (f"; {len(plain)} source texts not compressed" if plain else ""), highlight=False)
        raise typer.Exit(1 if stale or broken or plain else 0)
    with Progress(TextColumn("migrating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task("records", total=len(files))
        out = migrate(logs_dir, files, progress=lambda _p: progress.advance(task))
    for p, why in out.failed:
        err.print(f"[bold red]not migrated:[/bold red] {why}", highlight=False)
    mb = 1e6
    for p in out.not_records:
        console.print(f"left as it is (no record, or a probe's attachment): {p.relative_to(logs_dir)}",
                      style="dim", highlight=False)
    console.print(f"{len(out.rewritten)} records rewritten, {len(out.current)} already current, "
                  f"{len(out.failed)} failed; {len(out.blobs)} source texts stored in "
                  f"{logs_dir / 'sources'}; the records took {out.bytes_before / mb:.1f} MB and now take "
                  f"{out.bytes_after / mb:.1f} MB", highlight=False)
    texts = sources.compress_folder(logs_dir)
    if texts.blobs:
        console.print(f"{texts.blobs} source texts compressed: {texts.bytes_before / mb:.1f} MB to "
                      f"{texts.bytes_after / mb:.1f} MB", highlight=False)
    for p in texts.left or []:
        err.print(f"[bold red]not compressed:[/bold red] {p}: its bytes do not hash to its name", highlight=False)
    if out.failed or texts.left:
        raise typer.Exit(1)
