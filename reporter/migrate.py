"""Rewriting stored records in the current layout (``report migrate``), losslessly and provably so.

A record of an older schema loads unchanged (:func:`reporter.store.load` migrates it in memory);
this module rewrites the file: the texts it embeds go to the source store, the record is written
as one line in the current layout (:mod:`reporter.records`). Before a file is replaced, the new
text is read back through the same loader and compared with the old record: every field, every
sample bit for bit (floats compared as their IEEE-754 bits, so ``-0.0`` and ``0.0`` differ), and
every source text byte for byte through :func:`reporter.sources.read`. A file that would change in
any of them is left as it was and reported. Running it twice changes nothing the second time.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import packed, sources, store
from .records import SCHEMA_VERSION


class MigrationError(Exception):
    """A record that would not survive the rewrite unchanged; names the file and the first difference."""


@dataclass
class Outcome:
    rewritten: list[Path] = field(default_factory=list)
    current: list[Path] = field(default_factory=list)  # already in the current layout
    not_records: list[Path] = field(default_factory=list)  # JSON that is no record (a tool's raw output): left as is
    failed: list[tuple[Path, str]] = field(default_factory=list)
    blobs: list[Path] = field(default_factory=list)  # source texts stored now
    bytes_before: int = 0
    bytes_after: int = 0


def record_files(logs: Path) -> list[Path]:
    """Every ``.json`` file under ``logs``, hidden files and the source store left out."""
    return sorted(p for p in Path(logs).rglob("*.json")
                  if not any(part.startswith(".") for part in p.relative_to(logs).parts)
                  and sources.FOLDER not in p.relative_to(logs).parts[:1])


def is_record(path: Path) -> bool:
    """Whether a JSON file claims to be a record (:func:`reporter.store.claims_record`); anything else
    under logs/ (a tool's raw output kept beside the records) is not rewritten."""
    try:
        return store.claims_record(path.read_bytes())
    except OSError:
        return True  # unreadable: let the loader say why


def first_difference(a: object, b: object, where: str = "") -> str | None:
    """The path of the first place two dumped records differ, or None."""
    if type(a) is not type(b):
        return f"{where or '(top level)'}: {type(a).__name__} {a!r:.60} against {type(b).__name__} {b!r:.60}"
    if isinstance(a, dict):
        assert isinstance(b, dict)
        for k in dict.fromkeys([*a, *b]):
            if k not in a or k not in b:
                return f"{where}.{k}".lstrip(".") + (" is missing after" if k not in b else " is new after")
            found = first_difference(a[k], b[k], f"{where}.{k}")
            if found:
                return found.lstrip(".")
        return None
    if isinstance(a, list):
        assert isinstance(b, list)
        if len(a) != len(b):
            return f"{where}: {len(a)} items against {len(b)}".lstrip(".")
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{where}.{i}")
            if found:
                return found.lstrip(".")
        return None
    if isinstance(a, float):
        return None if struct.pack("<d", a) == struct.pack("<d", b) else f"{where}: {a!r} against {b!r}".lstrip(".")  # type: ignore[arg-type]
    return None if a == b else f"{where}: {a!r:.60} against {b!r:.60}".lstrip(".")


def same_record(logs: Path, before: store.AnyStored, after: store.AnyStored) -> str | None:
    """Where two loaded records differ (fields, samples bit for bit, source texts byte for byte), or
    None when they are the same record. The schema version is left out: it is what a migration changes."""
    a, b = before.model_dump(), after.model_dump()
    a.pop("schema_version", None)
    b.pop("schema_version", None)
    found = first_difference(a, b)
    if found:
        return found
    files_a, files_b = list(sources.files(before)), list(sources.files(after))
    for fa, fb in zip(files_a, files_b, strict=True):
        try:
            ta, tb = sources.read(logs, fa), sources.read(logs, fb)
        except sources.SourceError as e:
            return str(e)
        if ta.encode("utf-8") != tb.encode("utf-8"):
            return f"{fa.path}: the text read back differs from the text the record held"
    return None


def migrate_file(path: Path, logs: Path) -> tuple[bool, list[Path]]:
    """Rewrite one record in the current layout. Returns (whether the file changed, blobs stored now).
    Raises :class:`MigrationError` (the file untouched) when the rewrite would change anything."""
    raw = path.read_bytes()
    before = store.load(path)
    text = store.dumps(before)
    if raw == text.encode("utf-8"):
        return False, []
    blobs = sources.put_all(logs, [before])
    after = store.loads(text, path)
    if after.schema_version != SCHEMA_VERSION:
        raise MigrationError(f"{path}: reads back as schema {after.schema_version}, not {SCHEMA_VERSION}")
    diff = same_record(logs, before, after)
    if diff is not None:
        raise MigrationError(f"{path}: would change in the rewrite: {diff}; left as it was")
    store.write_atomic(path, text)
    return True, blobs


def migrate(logs: Path, files: Iterable[Path] | None = None,
            progress: Callable[[Path], None] | None = None) -> Outcome:
    """Rewrite every record under ``logs`` (or ``files``) in the current layout; see :func:`migrate_file`."""
    out = Outcome()
    for p in (record_files(logs) if files is None else list(files)):
        size = p.stat().st_size
        if not is_record(p):
            out.not_records.append(p)
            if progress is not None:
                progress(p)
            continue
        try:
            changed, blobs = migrate_file(p, logs)
        except (store.RecordError, MigrationError, sources.SourceError, packed.PackedArrayError) as e:
            out.failed.append((p, str(e)))
        else:
            out.blobs += blobs
            (out.rewritten if changed else out.current).append(p)
            out.bytes_before += size
            out.bytes_after += p.stat().st_size
        if progress is not None:
            progress(p)
    return out
