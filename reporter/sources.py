"""The source store: every source text a record ran, kept once, named by its sha256.

A record names each file of its code by path and sha256 (:class:`reporter.records.SourceFile`);
the text is the file ``logs/sources/<sha256>``, holding exactly the UTF-8 bytes whose sha256 is
its name. However many records ran a file, its text is stored once. A blob is written atomically
and never rewritten: its name is its content.

:func:`read` is the one way to a recorded file's text (``report show``, ``report diff``'s code
diff, re-verification, the tests): the text the record carried in memory (a snapshot just taken,
or a schema-1 record that embedded it), else the store's blob. A blob that is missing raises
:class:`SourceMissing`, one whose bytes do not hash to its name :class:`SourceCorrupt`; both
name the record's file and the blob, and everything else about the record still works.

Nothing here imports the harness or the renderers: a GPU node writes blobs with records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from .atomic import write_atomic, write_new
from .records import CodeSnapshot, Microbench, ProbeRecord, Reverification, Run, SameCode, SourceFile

FOLDER = "sources"


class SourceError(Exception):
    """A recorded file whose text cannot be read; the message names the file and the blob."""


class SourceMissing(SourceError):
    pass


class SourceCorrupt(SourceError):
    pass


def sha256_of(text: str) -> str:
    """The sha256 a record states for a text: of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def folder(logs: Path) -> Path:
    return Path(logs) / FOLDER


def blob_path(logs: Path, sha256: str) -> Path:
    return folder(logs) / sha256


def has(logs: Path, sha256: str) -> bool:
    return blob_path(logs, sha256).is_file()


def put(logs: Path, text: str, sha256: str | None = None) -> Path:
    """Store ``text`` under its sha256 (``sha256``, when given, must be it) unless it is there;
    returns the blob's path. A blob is never replaced, unless its bytes no longer hash to its name
    (changed by hand): the text in hand, which does, puts it right."""
    data = text.encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and sha256 != digest:
        raise SourceCorrupt(f"a text stated as sha256 {sha256[:12]}… hashes to {digest[:12]}…: not stored")
    path = blob_path(logs, digest)
    if not path.is_file():
        write_new(path, data)  # never over a blob another writer put there first (the same bytes anyway)
    elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        write_atomic(path, data)  # changed after it was written: the text in hand puts it right
    return path


def read(logs: Path, f: SourceFile) -> str:
    """The text of one recorded file: what the record carries in memory, else its blob."""
    if f.text is not None:
        return f.text
    path = blob_path(logs, f.sha256)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SourceMissing(f"{f.path}: its text (sha256 {f.sha256[:12]}…) is not in the source store "
                            f"({path} is missing)") from None
    except OSError as e:
        raise SourceMissing(f"{f.path}: cannot read its text, {path}: {e.strerror or e}") from None
    if hashlib.sha256(data).hexdigest() != f.sha256:
        raise SourceCorrupt(f"{f.path}: {path} does not hash to its name: the blob was changed after it was written")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SourceCorrupt(f"{f.path}: {path} is not UTF-8 text") from None


def available(logs: Path, f: SourceFile) -> bool:
    """Whether :func:`read` would give the file's text (in memory or a blob that is there)."""
    return f.text is not None or has(logs, f.sha256)


def snapshots(record: object) -> Iterator[CodeSnapshot]:
    """Every code snapshot a record holds: a run's, a probe's, a micro-benchmark's, both runs of each
    re-verified case."""
    if isinstance(record, Run | ProbeRecord | Microbench):
        if record.code is not None:
            yield record.code
    elif isinstance(record, Reverification):
        for c in record.cases:
            yield c.after.code
            yield c.before.code
    elif isinstance(record, SameCode):
        yield record.before
        yield record.after


def files(record: object) -> Iterator[SourceFile]:
    for snap in snapshots(record):
        yield from snap.files


def put_all(logs: Path, records: Iterable[object]) -> list[Path]:
    """Store the text of every file the records carry in memory; returns the blobs written now.
    A file whose text is not in memory must already be in the store: a record is never written
    naming a text the store cannot give back."""
    written = []
    for record in records:
        for f in files(record):
            if f.text is not None:
                existed = has(logs, f.sha256)
                try:
                    path = put(logs, f.text, f.sha256)
                except SourceCorrupt as e:
                    raise SourceCorrupt(f"{f.path}: {e}") from None
                if not existed:
                    written.append(path)
            elif not has(logs, f.sha256):
                raise SourceMissing(f"{f.path}: the record names a text (sha256 {f.sha256[:12]}…) that is neither "
                                    f"in memory nor in {folder(logs)}: not written")
    return written


def missing(logs: Path, record: object) -> list[SourceFile]:
    """The files of a record whose text cannot be read here."""
    return [f for f in files(record) if not available(logs, f)]
