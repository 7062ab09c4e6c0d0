"""Rewriting stored records in the current layout (``report migrate``), losslessly and provably so.

A record of an older schema loads unchanged (:func:`reporter.store.load` migrates it in memory);
this module rewrites the file: the texts it embeds go to the source store, the record is written
as one line in the current layout (:mod:`reporter.records`), gzip-compressed at ``X.json.gz``
(:mod:`reporter.store`; a plain ``X.json`` is removed once its replacement reads back). Before a file is replaced, the new
text is read back through the same loader and compared with the old record: every field, every
sample bit for bit (floats compared as their IEEE-754 bits, so ``-0.0`` and ``0.0`` differ), and
every source text byte for byte through :func:`reporter.sources.read`. A file that would change in
any of them is left as it was and reported. Running it twice changes nothing the second time.
"""

from __future__ import annotations

import gzip
import pickle
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import packed, sources, store
from .records import SCHEMA_VERSION, ProbeRecord


class MigrationError(Exception):
    """A record that would not survive the rewrite unchanged; names the file and the first difference."""


@dataclass
class Outcome:
    rewritten: list[Path] = field(default_factory=list)
    current: list[Path] = field(default_factory=list)  # already in the current layout
    # no record (a tool's raw output, a probe's attachment): left as it is
    not_records: list[Path] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)
    blobs: list[Path] = field(default_factory=list)  # source texts stored now
    bytes_before: int = 0
    bytes_after: int = 0


def record_files(logs: Path) -> list[Path]:
    """Every ``.json`` and ``.json.gz`` file under ``logs``, hidden files and the source store left out."""
    return sorted(p for p in {*Path(logs).rglob("*.json"), *Path(logs).rglob("*.json.gz")}
                  if not any(part.startswith(".") for part in p.relative_to(logs).parts)
                  and sources.FOLDER not in p.relative_to(logs).parts[:1])


def is_record(path: Path) -> bool:
    """Whether a JSON file claims to be a record (:func:`reporter.store.claims_record`); anything else
    under logs/ (a tool's raw output kept beside the records) is not rewritten."""
    try:
        return store.claims_record(store.record_bytes(path.read_bytes(), path))
    except (OSError, store.RecordError):
        return True  # unreadable: let the loader say why


def probe_attachments(paths: Iterable[Path]) -> set[Path]:
    """The files among ``paths`` that a probe record beside them names as its attachment: kept as the
    probe left them (a run's record among them too), never rewritten."""
    out: set[Path] = set()
    for p in paths:
        if p.parent.name == "probes" and store.is_record_name(p.name):
            try:
                record = store.load(p)
            except store.RecordError:
                continue
            if isinstance(record, ProbeRecord):
                out |= {p.parent / a for a in record.attachments}
    return out


def is_current(path: Path, record: store.AnyStored) -> bool:
    """Whether a record's file is in the current layout: compressed, and its JSON the current text."""
    return (path.name.endswith(store.SUFFIX)
            and store.record_bytes(path.read_bytes(), path) == store.dumps(record).encode("utf-8"))


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
    # equal pickles are equal values, every float bit for bit (pickle writes the IEEE-754 doubles) and
    # every type kept (an int is no float, a bool no int): the walk below, a hundred times slower, only
    # to name where two records differ (or to find two pickled differently the same after all)
    found = None if pickle.dumps(a, 5) == pickle.dumps(b, 5) else first_difference(a, b)
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


def migrate_file(path: Path, logs: Path) -> tuple[Path | None, list[Path]]:
    """Rewrite one record in the current layout: one line of the current schema, compressed, kept at
    ``X.json.gz`` (a plain ``X.json`` is removed once its replacement reads back the same). Returns
    (the file now holding it, None when nothing changed; the blobs stored now). Raises
    :class:`MigrationError` (nothing changed) when the rewrite would change anything."""
    before = store.load(path)
    if is_current(path, before):
        return None, []
    text = store.dumps(before)
    blobs = sources.put_all(logs, [before])
    target = store.compressed(path)
    after = store.loads(text, target)
    if after.schema_version != SCHEMA_VERSION:
        raise MigrationError(f"{path}: reads back as schema {after.schema_version}, not {SCHEMA_VERSION}")
    diff = same_record(logs, before, after)
    if diff is not None:
        raise MigrationError(f"{path}: would change in the rewrite: {diff}; left as it was")
    data = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)
    if target != path and target.exists():
        if store.record_bytes(target.read_bytes(), target) != text.encode("utf-8"):
            raise MigrationError(f"{path}: {target.name} beside it holds another record; both left as they are")
    else:
        store.write_atomic(target, data)
    back = same_record(logs, after, store.load(target))  # what is on disk now, read back
    if back is not None:
        raise MigrationError(f"{target}: does not read back as the record written ({back}); {path.name} kept")
    if target != path:
        path.unlink()
    return target, blobs


def migrate(logs: Path, files: Iterable[Path] | None = None,
            progress: Callable[[Path], None] | None = None) -> Outcome:
    """Rewrite every record under ``logs`` (or ``files``) in the current layout; see :func:`migrate_file`."""
    out = Outcome()
    paths = record_files(logs) if files is None else list(files)
    attached = probe_attachments(paths)
    for p in paths:
        size = p.stat().st_size
        if p in attached or not is_record(p):
            out.not_records.append(p)
            if progress is not None:
                progress(p)
            continue
        try:
            now, blobs = migrate_file(p, logs)
        except (store.RecordError, MigrationError, sources.SourceError, packed.PackedArrayError) as e:
            out.failed.append((p, str(e)))
        else:
            out.blobs += blobs
            (out.rewritten if now is not None else out.current).append(p)
            out.bytes_before += size
            out.bytes_after += (now or p).stat().st_size
        if progress is not None:
            progress(p)
    return out
