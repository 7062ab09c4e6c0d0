"""Bringing records made elsewhere (a GPU node's session) into this checkout's logs/ (``report merge``).

A device session ships back only what it made: the new records, the source texts they name and
the files kept beside them (a profiler report, a probe's attachment), as a ``.tgz`` whose paths
start with ``logs/`` (``tools/gpu_session.sh`` makes it) or as a folder laid out like logs/. This
module checks each file and copies it in:

* a source text (``logs/sources/<sha256>.gz``, or the plain ``<sha256>`` of an older tool) must hash to its
  name; it is kept gzip-compressed, as the store writes it, and a text here whose blob no longer gives it
  back is put right by the shipped one;
* a record must load (:func:`reporter.store.load`) with every packed array decoding, lie where the
  store would write it (a run under its assignment and version), and every text its code names must
  be in the incoming files or already in the store; it is kept compressed (``.json.gz``) whichever
  form it came in, its JSON bytes unchanged;
* a file that is already here with the same bytes is left alone, so a second merge of the same
  files changes nothing; one that is here with other bytes is a conflict: it is reported and
  never overwritten.

Texts go in first, then the other files, then the records, each written atomically, so a record
never lands before what it names.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from . import packed, sources, store


class MergeError(Exception):
    """An input that cannot be merged at all (not a tarball or folder, an unsafe path); names it."""


@dataclass
class MergeOutcome:
    added: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    refused: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.conflicts and not self.refused


def _members(source: Path) -> dict[str, bytes]:
    """The files of a shipped-back session, by their path under logs/ ('flashattn/v16_x/....json')."""
    out: dict[str, bytes] = {}
    if source.is_dir():
        base = source / "logs" if (source / "logs").is_dir() else source
        for p in sorted(base.rglob("*")):
            if p.is_file() and not p.is_symlink():
                out[p.relative_to(base).as_posix()] = p.read_bytes()
        return out
    try:
        tar = tarfile.open(source, "r:*")
    except (OSError, tarfile.TarError) as e:
        raise MergeError(f"{source}: neither a folder nor a tarball ({e})") from None
    with tar:
        for m in tar.getmembers():
            if m.isdir():
                continue
            parts = PurePosixPath(m.name).parts
            if not m.isfile() or m.name.startswith("/") or ".." in parts:
                raise MergeError(f"{source}: member {m.name!r} is not a plain file under logs/: nothing merged")
            if parts and parts[0] == ".":
                parts = parts[1:]
            if not parts or parts[0] != "logs" or len(parts) < 2:
                raise MergeError(f"{source}: member {m.name!r} lies outside logs/: nothing merged")
            f = tar.extractfile(m)
            assert f is not None
            out[PurePosixPath(*parts[1:]).as_posix()] = f.read()
    return out


def merge(source: Path, logs: Path) -> MergeOutcome:
    """Copy what ``source`` holds into ``logs``; see the module's description."""
    files = _members(source)
    out = MergeOutcome()
    blobs = {k: v for k, v in files.items() if PurePosixPath(k).parts[0] == sources.FOLDER}
    records: dict[str, bytes] = {}  # by the path the record is kept at (``.json.gz``): its JSON bytes
    taken: set[str] = set()  # the shipped files read as records (kept or refused)
    attached = _attachments(files, blobs)
    for k, v in files.items():
        if k in blobs or not store.is_record_name(k) or k in attached:
            continue
        try:
            raw = store.record_bytes(v, Path("logs") / k)
        except store.RecordError as e:
            out.refused.append((k, str(e)))
            taken.add(k)
            continue
        if not store.claims_record(raw):
            continue  # a tool's JSON output kept beside the records: copied as it is
        taken.add(k)
        kept = store.compressed(PurePosixPath(k)).as_posix()
        if kept in records:
            out.refused.append((k, f"a second file for the record {kept}"))
            continue
        records[kept] = raw
    others = {k: v for k, v in files.items() if k not in blobs and k not in taken}
    incoming_texts: set[str] = set()
    for rel, data in blobs.items():
        name = PurePosixPath(rel).name
        if len(PurePosixPath(rel).parts) != 2:
            out.refused.append((rel, f"a file in a folder under {sources.FOLDER}/, where only source texts lie"))
            continue
        try:
            text = sources.blob_text_bytes(name, data)
        except ValueError as e:
            out.refused.append((rel, f"a source text that is {e}"))
            continue
        sha = sources.blob_name_sha(name)
        if hashlib.sha256(text).hexdigest() != sha:
            out.refused.append((rel, "a source text whose bytes do not hash to its name"))
            continue
        incoming_texts.add(sha)
        if sources.intact(logs, sha):  # the same text, stored here already (in either form)
            out.unchanged.append(rel)
        elif sources.has(logs, sha):  # stored here but changed since: the shipped text, which is right, mends it
            try:
                sources.put(logs, text.decode("utf-8"), sha)
                out.added.append(rel)
            except (UnicodeDecodeError, sources.SourceError, OSError) as e:
                out.conflicts.append((rel, f"here with other bytes and cannot be put right: {e}"))
        else:
            _place(logs, f"{sources.FOLDER}/{sources.blob_path(Path(), sha).name}", sources.encode(text), out)
    for rel, data in others.items():
        _place(logs, rel, data, out)
    for rel, raw in records.items():
        why = _refusal(rel, raw, logs, incoming_texts)
        if why is not None:
            out.refused.append((rel, why))
            continue
        _place_record(logs, rel, raw, out)
    return out


def _attachments(files: dict[str, bytes], blobs: dict[str, bytes]) -> set[str]:
    """The shipped files that a shipped record names as its attachments (a probe's raw output, kept beside
    it under the names in its ``attachments``): copied as they are, never read as records, whatever JSON
    they hold (a trace's stamps are a list)."""
    out: set[str] = set()
    for k, v in files.items():
        if k in blobs or not store.is_record_name(k):
            continue
        try:
            data = json.loads(store.record_bytes(v, Path("logs") / k))
        except (store.RecordError, ValueError, RecursionError):
            continue
        names = data.get("attachments") if isinstance(data, dict) and "schema_version" in data else None
        if isinstance(names, list):
            folder = PurePosixPath(k).parent
            out.update((folder / n).as_posix() for n in names if isinstance(n, str) and "/" not in n)
    return out - {k for k in files if k in blobs}


def _refusal(rel: str, data: bytes, logs: Path, incoming_texts: set[str]) -> str | None:
    """Why a shipped record cannot come in (None: it can): it does not load, a packed array of it does
    not decode, it lies where no query would read it as itself, or it names a text nobody has. A
    schema-1 record's embedded texts go to the store here."""
    where = Path("logs") / rel
    try:
        record = store.loads(data.decode("utf-8"), where)
        packed.decode_all(record)
    except (store.RecordError, UnicodeDecodeError, packed.PackedArrayError) as e:
        return str(e)
    expected = _home(record)
    if expected is not None and expected != rel:
        return f"a record that belongs at logs/{expected}, not here"
    lacking = [f for f in sources.files(record)
               if f.text is None and f.sha256 not in incoming_texts and not sources.has(logs, f.sha256)]
    if lacking:
        return (f"names {len(lacking)} source text(s) neither shipped nor in {logs / 'sources'} "
                f"({lacking[0].path}, sha256 {lacking[0].sha256[:12]}…)")
    try:
        sources.put_all(logs, [record])  # schema 1: the texts it embeds
    except (sources.SourceError, OSError) as e:
        return str(e)
    return None


def _home(record: store.AnyStored) -> str | None:
    """Where under logs/ the store writes a record of this kind, id and place (None: no fixed place)."""
    root = Path("/")
    for kind, where in (("run", store.run_path), ("sweep", store.sweep_path), ("crosscheck", store.crosscheck_path),
                        ("ceilings", store.ceilings_path),
                        ("reverification", store.reverification_path), ("probe", store.probe_path),
                        ("same_code", store.same_code_path), ("microbench", store.microbench_path)):
        if record.kind == kind:
            return where(root, record).relative_to(root).as_posix()  # type: ignore[arg-type]
    return None


def _place_record(logs: Path, rel: str, raw: bytes, out: MergeOutcome) -> None:
    """Keep a record (its JSON bytes ``raw``) at ``rel``, compressed; a record of that name already here
    (compressed, or plain from an older tool) is unchanged when its JSON bytes are the same, else a conflict."""
    target = logs / rel
    plain = store.plain(target)
    try:
        here = next((p for p in (target, plain) if p.exists()), None)
        if here is None and store.write_new(target, gzip.compress(raw, compresslevel=9, mtime=0)):
            out.added.append(rel)
            return
        here = here or target
        try:
            same = here.is_file() and store.record_bytes(here.read_bytes(), here) == raw
        except store.RecordError:
            same = False
        if same:
            out.unchanged.append(rel)
        else:
            out.conflicts.append((rel, f"already here ({here.name}) with another record; left as it is"))
    except OSError as e:
        out.conflicts.append((rel, f"cannot be written: {e.strerror or e}"))


def _place(logs: Path, rel: str, data: bytes, out: MergeOutcome) -> None:
    target = logs / rel
    try:
        if store.write_new(target, data):
            out.added.append(rel)
        elif target.is_file() and target.read_bytes() == data:
            out.unchanged.append(rel)
        else:
            out.conflicts.append((rel, "already here with other bytes; left as it is"))
    except OSError as e:
        out.conflicts.append((rel, f"cannot be written: {e.strerror or e}"))
