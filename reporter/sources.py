"""The source store: every source text a record ran, kept once, named by its sha256.

A record names each file of its code by path and sha256 (:class:`reporter.records.SourceFile`);
the text is the file ``logs/sources/<sha256>.gz``, gzip of exactly the UTF-8 bytes whose sha256 is
its name (written without a timestamp, so the same text gives the same bytes on every machine). A
store written before blobs were compressed holds ``logs/sources/<sha256>``, the bytes themselves:
both are read, :func:`compress_folder` (``report migrate``) turns the old form into the new. However
many records ran a file, its text is stored once. A blob is written atomically and never rewritten
while it holds its text: its name is its content (one changed by hand is put right by the text in hand).

:func:`read` is the one way to a recorded file's text (``report show``, ``report diff``'s code
diff, re-verification, the tests): the text the record carried in memory (a snapshot just taken,
or a schema-1 record that embedded it), else the store's blob. A blob that is missing raises
:class:`SourceMissing`, one whose bytes do not hash to its name :class:`SourceCorrupt`; both
name the record's file and the blob, and everything else about the record still works.

Nothing here imports the harness or the renderers: a GPU node writes blobs with records.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
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


SUFFIX = ".gz"  # a blob's file is <sha256>.gz; a store written before has <sha256>
_PLAIN_NAME = re.compile(r"^[0-9a-f]{64}$")  # a blob of the older, plain form (not a temporary file, not a .gitkeep)


def blob_path(logs: Path, sha256: str) -> Path:
    """Where the blob of ``sha256`` is written (gzip); :func:`existing_blob` finds either form."""
    return folder(logs) / f"{sha256}{SUFFIX}"


def _plain_path(logs: Path, sha256: str) -> Path:
    return folder(logs) / sha256


def existing_blob(logs: Path, sha256: str) -> Path | None:
    """The file that holds the text of ``sha256``, compressed or (a store written before) not; None if neither."""
    for path in (blob_path(logs, sha256), _plain_path(logs, sha256)):
        if path.is_file():
            return path
    return None


def has(logs: Path, sha256: str) -> bool:
    return existing_blob(logs, sha256) is not None


def blob_name_sha(name: str) -> str:
    """The sha256 a blob's file name states: ``<sha256>.gz`` or ``<sha256>``."""
    return name.removesuffix(SUFFIX)


def blob_text_bytes(name: str, data: bytes) -> bytes:
    """The text bytes a blob's file holds (``data``, its content; ``name``, its file name): gunzipped for a
    ``.gz`` blob. Raises ValueError for a ``.gz`` blob that is no gzip stream."""
    if not name.endswith(SUFFIX):
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as e:
        raise ValueError(f"not a gzip stream ({e})") from None


def encode(data: bytes) -> bytes:
    """A blob's file content for the text bytes ``data``: gzip at level 9 with no timestamp, the same bytes
    on every machine."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def _holds(path: Path, digest: str) -> bool:
    """Whether the blob file ``path`` holds the text whose sha256 is ``digest``."""
    try:
        return hashlib.sha256(blob_text_bytes(path.name, path.read_bytes())).hexdigest() == digest
    except (ValueError, FileNotFoundError):
        return False


def intact(logs: Path, sha256: str) -> bool:
    """Whether the store holds the text of ``sha256`` in a blob that gives it back."""
    path = existing_blob(logs, sha256)
    return path is not None and _holds(path, sha256)


def put(logs: Path, text: str, sha256: str | None = None) -> Path:
    """Store ``text`` under its sha256 (``sha256``, when given, must be it) unless it is there;
    returns the blob's path. A blob is never replaced, unless its bytes no longer give its name's text
    (changed by hand): the text in hand, which does, puts it right."""
    data = text.encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and sha256 != digest:
        raise SourceCorrupt(f"a text stated as sha256 {sha256[:12]}… hashes to {digest[:12]}…: not stored")
    path = existing_blob(logs, digest)
    if path is None:
        path = blob_path(logs, digest)
        write_new(path, encode(data))  # never over a blob another writer put there first (the same bytes anyway)
    elif not _holds(path, digest):
        # changed after it was written: the text in hand puts it right, in the store's present form
        bad, path = path, blob_path(logs, digest)
        write_atomic(path, encode(data))
        if bad != path:
            bad.unlink(missing_ok=True)
    return path


def read(logs: Path, f: SourceFile) -> str:
    """The text of one recorded file: what the record carries in memory, else its blob."""
    if f.text is not None:
        return f.text
    data = None
    for _ in range(2):  # a plain blob that `report migrate` compresses meanwhile is read as its .gz
        path = existing_blob(logs, f.sha256)
        if path is None:
            raise SourceMissing(f"{f.path}: its text (sha256 {f.sha256[:12]}…) is not in the source store "
                                f"(neither {blob_path(logs, f.sha256)} nor {_plain_path(logs, f.sha256).name} is there)")
        try:
            data = blob_text_bytes(path.name, path.read_bytes())
            break
        except FileNotFoundError:
            continue
        except OSError as e:
            raise SourceMissing(f"{f.path}: cannot read its text, {path}: {e.strerror or e}") from None
        except ValueError as e:
            raise SourceCorrupt(f"{f.path}: {path} is {e}: the blob was changed after it was written") from None
    if data is None:
        raise SourceMissing(f"{f.path}: its text (sha256 {f.sha256[:12]}…) went from the source store while "
                            "it was read")
    if hashlib.sha256(data).hexdigest() != f.sha256:
        raise SourceCorrupt(f"{f.path}: {path} does not hash to its name: the blob was changed after it was written")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SourceCorrupt(f"{f.path}: {path} is not UTF-8 text") from None


@dataclass
class Compressed:
    """What :func:`compress_folder` did: blobs turned to gzip, the bytes they took before and after, and the
    plain blobs it left because their bytes do not hash to their names."""

    blobs: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    left: list[Path] | None = None


def plain_blobs(logs: Path) -> list[Path]:
    """The store's blobs of the older, plain form (``<sha256>``, 64 hex digits): what :func:`compress_folder`
    rewrites; anything else there (a writer's temporary file) is not one."""
    root = folder(logs)
    if not root.is_dir():
        return []
    return [p for p in root.iterdir() if p.is_file() and _PLAIN_NAME.match(p.name)]


def compress_folder(logs: Path) -> Compressed:
    """Every plain blob of the store (``<sha256>``, the form before blobs were compressed) written as
    ``<sha256>.gz`` and removed once the new file reads back as the same text. A plain blob whose bytes do
    not hash to its name is left where it is, and said."""
    out = Compressed(left=[])
    for path in sorted(plain_blobs(logs)):
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != path.name:
            if _holds(blob_path(logs, path.name), path.name):
                path.unlink()  # changed by hand, and the .gz beside it holds the text: the .gz stands
            else:
                out.left.append(path)  # type: ignore[union-attr]
            continue
        target = blob_path(logs, digest)
        if not _holds(target, digest):
            write_atomic(target, encode(data))
        if not _holds(target, digest):  # pragma: no cover - the write above is read back
            raise SourceCorrupt(f"{target}: written from {path} but does not read back as its text")
        out.blobs += 1
        out.bytes_before += len(data)
        out.bytes_after += target.stat().st_size
        path.unlink()
    return out


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
                existed = intact(logs, f.sha256)
                try:
                    path = put(logs, f.text, f.sha256)
                except SourceCorrupt as e:
                    raise SourceCorrupt(f"{f.path}: {e}") from None
                if not existed:
                    written.append(path)  # new, or put right
            elif not has(logs, f.sha256):
                raise SourceMissing(f"{f.path}: the record names a text (sha256 {f.sha256[:12]}…) that is neither "
                                    f"in memory nor in {folder(logs)}: not written")
    return written


def missing(logs: Path, record: object) -> list[SourceFile]:
    """The files of a record whose text cannot be read here."""
    return [f for f in files(record) if not available(logs, f)]
