"""Reading and writing records under ``logs/``.

Layout::

    logs/<assignment>/<version>/<utc-time>_<gpu>_<case>.json.gz     Run
    logs/<assignment>/<version>/sweeps/<utc-time>_<gpu>_<case>.json.gz   Sweep
    logs/<assignment>/<version>/crosschecks/<utc-time>_<gpu>.json.gz    CrossCheck
    logs/<assignment>/<version>/reverify/<utc-time>_<gpu>.json.gz       Reverification
    logs/<assignment>/<version>/same_code/<utc-time>_<digests>.json.gz  SameCode
    logs/devices/<gpu>/<utc-time>.json.gz                             DeviceCeilings
    logs/devices/<gpu>/probes/<utc-time>_<name>.json.gz               ProbeRecord
    logs/devices/<gpu>/microbench/<utc-time>.json.gz                  Microbench
    logs/sources/<sha256>.gz                                          a source text, gzip (reporter.sources)

A record file is its one line of JSON, gzip-compressed (``zcat`` shows it): the JSON text of a
timing repeats its field names, device and code lists from record to record, and compressed a
record takes about half the room, which keeps a project's history of runs small enough to travel
with its tree. A record written as plain ``.json`` (by an older version of this tool, or by hand)
reads the same; ``report migrate`` compresses it. Where a folder holds both ``X.json`` and
``X.json.gz``, the plain one is left out with a warning.

Which of a version's runs stands for it is :mod:`reporter.standing`'s question, not this module's.

A record is written as one line of JSON in the layout :mod:`reporter.records` describes (schema 2:
source texts in the source store, per-sample arrays packed); the texts it ran go to the store
first, so a written record never names a text the store cannot give back. Records of schema 1
(indented, texts embedded) load unchanged; `report migrate` (:mod:`reporter.migrate`) rewrites them in
the current layout.

Writes are atomic (temp file in the same folder, fsync, rename), so an interrupted run
never leaves half a record. A file that is not valid JSON, or not one of our records,
raises :class:`RecordError` naming the file and the field: bytes that are not UTF-8, nesting
deeper than any record's, a number that is not finite (NaN, Infinity), a value of the wrong
type (records are read strictly: ``"0.5"`` is not a number, ``"yes"`` not a boolean, ``12`` not
a date) and a ``schema_version`` outside the versions this tool knows.

The queries (:func:`runs`, :func:`sweeps`, ...) go on past a file they cannot use: each one
is left out with a :class:`RecordSkipped` warning naming it and why, so one stray file never
hides the good ones. A record whose assignment or version is not the folder it sits in is left
out the same way (a histogram record copied under ``logs/flashattn/v03/`` is not a v03 run).
"""

from __future__ import annotations

import errno
import gc
import glob
import gzip
import json
import math
import os
import re
import stat
import sys
import warnings
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, TypeVar

from pydantic import TypeAdapter, ValidationError

from . import sources
from .atomic import write_atomic, write_new
from .packed import PackedArrayError
from .records import (SCHEMA_VERSION, AnyRecord, CrossCheck, DeviceCeilings, Microbench, ProbeRecord, Reverification, Run,
                      SameCode, Sweep, TimingStats)

if TYPE_CHECKING:
    from .assignments import LegacyCaseKeys

_ADAPTER: TypeAdapter = TypeAdapter(AnyRecord)


class RecordError(Exception):
    """A record file that cannot be used; the message names the file and the field."""


class RecordSkipped(UserWarning):
    """A file under logs/ that a query left out; the message names it and says why."""


def _skip(message: str) -> None:
    warnings.warn(RecordSkipped(message), stacklevel=3)


def _nonfinite(x: object, where: tuple = ()) -> tuple[tuple, float] | None:
    """The path and value of the first number in parsed JSON that is not finite, if any."""
    if isinstance(x, float):
        return None if math.isfinite(x) else (where, x)
    if isinstance(x, dict):
        items = x.items()
    elif isinstance(x, list):
        items = enumerate(x)
    else:
        return None
    for k, v in items:
        found = _nonfinite(v, (*where, k))
        if found is not None:
            return found
    return None


def utc_stamp(t: datetime | None = None) -> str:
    t = t or datetime.now(UTC)
    return t.astimezone(UTC).strftime("%Y%m%dT%H%M%S") + f"{t.microsecond // 1000:03d}Z"


R = TypeVar("R", CrossCheck, Reverification, SameCode)

AnyStored = Run | Sweep | DeviceCeilings | CrossCheck | Reverification | ProbeRecord | SameCode | Microbench


SUFFIX = ".json.gz"  # a record's file: its one line of JSON, gzip-compressed
PLAIN_SUFFIX = ".json"  # a record written uncompressed (older tool versions, hand-made): read the same
MAX_RECORD_BYTES = 64 << 20  # no record comes near this (the largest is under 1 MB); a bigger stream is refused


def dumps(record: AnyStored) -> str:
    """A record's text: one line of JSON (schema 2), no source text in it."""
    return record.model_dump_json() + "\n"


def encode(record: AnyStored) -> bytes:
    """A record's file as it is stored: :func:`dumps`, gzip-compressed (no name, no time in the gzip
    header, so the same record always gives the same bytes with one zlib)."""
    return gzip.compress(dumps(record).encode("utf-8"), compresslevel=9, mtime=0)


PathT = TypeVar("PathT", bound=PurePath)


def stem(path: PurePath) -> str:
    """A record file's name without its suffix: ``X.json.gz`` and ``X.json`` are both ``X``."""
    name = Path(path).name
    for suffix in (SUFFIX, PLAIN_SUFFIX):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return Path(path).stem


def compressed(path: PathT) -> PathT:
    """Where a record file is kept: ``X.json`` (or ``X.json.gz``) -> ``X.json.gz``."""
    return path.with_name(stem(path) + SUFFIX)


def plain(path: PathT) -> PathT:
    """The plain name of a record file: ``X.json.gz`` (or ``X.json``) -> ``X.json``."""
    return path.with_name(stem(path) + PLAIN_SUFFIX)


def is_record_name(name: str) -> bool:
    return name.endswith(SUFFIX) or name.endswith(PLAIN_SUFFIX)


def record_bytes(raw: bytes, path: Path) -> bytes:
    """The JSON bytes of a record file's content: ``raw`` itself for a plain ``.json`` file, else the
    gzip stream inflated (at most :data:`MAX_RECORD_BYTES`). :class:`RecordError` naming the file
    for a stream that is not gzip, is cut short, or inflates past the limit."""
    if not os.fspath(path).endswith(".gz"):
        return raw
    d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(raw, MAX_RECORD_BYTES + 1)
    except zlib.error as e:
        raise RecordError(f"{path}: not a gzip stream ({e}): not a work-log record") from None
    if len(out) > MAX_RECORD_BYTES or d.unconsumed_tail:
        raise RecordError(f"{path}: inflates to more than {MAX_RECORD_BYTES >> 20} MiB, far more than any "
                          "record: not a work-log record (not read further)")
    if not d.eof:
        raise RecordError(f"{path}: the gzip stream is cut short (a partial copy?): not a work-log record")
    if d.unused_data:
        raise RecordError(f"{path}: {len(d.unused_data)} bytes after the end of the gzip stream: "
                          "not a work-log record")
    return out


def save(record: AnyStored, path: Path, *, logs: Path) -> Path:
    """Write ``record`` at ``path``, the texts of the code it ran first into ``logs``' source store:
    compressed where the name ends in ``.gz`` (as every path this module gives does), else plain."""
    sources.put_all(logs, [record])
    write_atomic(path, encode(record) if Path(path).name.endswith(".gz") else dumps(record))
    return path


def save_new(run: Run, logs: Path, tries: int = 1000) -> Path:
    """Write a new run's record under ``logs`` without ever replacing one: when a record of the same
    id is already there (a second ``report run`` of the same version and case in the same
    millisecond), the run's id moves on by a millisecond until its name is free. The file appears
    whole (linked from a complete temporary file) or not at all; the texts of its code go to the
    source store first."""
    sources.put_all(logs, [run])
    for _ in range(tries):
        path = run_path(logs, run)
        if not plain(path).exists() and write_new(path, encode(run)):
            return path
        run.run_id = _next_id(run.run_id)
    raise RecordError(f"{run_path(logs, run)}: no free record name after {tries} tries")


def _next_id(run_id: str) -> str:
    """'20261123T070512345Z_h100_benchmark' -> '20261123T070512346Z_h100_benchmark'."""
    stamp, sep, rest = run_id.partition("_")
    try:
        t = datetime.strptime(stamp[:-4], "%Y%m%dT%H%M%S").replace(tzinfo=UTC) + timedelta(
            milliseconds=int(stamp[-4:-1]) + 1)
    except ValueError:
        return run_id + "+"
    return utc_stamp(t) + sep + rest


def _migrate(data: dict, path: Path) -> dict:
    """Bring an older record up to SCHEMA_VERSION; newer is refused.

    1 -> 2: the layout changed, not the content. A schema-1 record embeds each source text
    (``code.files[].text``, which its SourceFile keeps in memory for :func:`reporter.sources.read`)
    and writes the per-sample arrays as JSON lists, both of which the current models read; only
    the version numbers change, the record's and those of the runs a re-verification holds."""
    version = data.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise RecordError(f"{path}: field 'schema_version' is missing or not an integer: not a work-log record")
    if version < 1:
        raise RecordError(f"{path}: field 'schema_version' is {version}; record versions start at 1")
    if version > SCHEMA_VERSION:
        raise RecordError(f"{path}: field 'schema_version' is {version}, newer than this tool's "
                          f"{SCHEMA_VERSION}: upgrade the reporter package")
    if version == 1:
        data = {**data, "schema_version": 2}
        if data.get("kind") == "reverification" and isinstance(data.get("cases"), list):
            data["cases"] = [_nested_runs_v2(c) for c in data["cases"]]
    return data


def _bumped(record: AnyStored) -> AnyStored:
    """A schema-1 record read as it is: the version numbers of schema 2 (see :func:`_migrate`)."""
    record.schema_version = SCHEMA_VERSION
    if isinstance(record, Reverification):
        for c in record.cases:
            c.after.schema_version = c.before.schema_version = SCHEMA_VERSION
    return record


def _nested_runs_v2(case: object) -> object:
    if not isinstance(case, dict):
        return case
    out = dict(case)
    for side in ("after", "before"):
        if isinstance(out.get(side), dict) and out[side].get("schema_version") == 1:
            out[side] = {**out[side], "schema_version": 2}
    return out


KINDS = ("run", "ceilings", "sweep", "crosscheck", "reverification", "probe", "same_code", "microbench")


def claims_record(raw: bytes) -> bool:
    """Whether JSON bytes claim to be a record (an object with a ``schema_version``), so that the
    loader should read them; a tool's raw output kept beside the records does not. Bytes that do not
    parse claim to be one: the loader then says why they are not."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return True
    return not isinstance(data, dict) or "schema_version" in data


def _has_constant(raw: str) -> bool:
    """NaN, Infinity or -Infinity where a JSON value can start (after ``:``, ``[`` or ``,``): the only
    place Python's json, or pydantic's parser, would read one as a number. The same words inside a
    string (a source file a record embeds, say) do not send the record down load's slow path."""
    for word in ("NaN", "Infinity"):
        at = raw.find(word)
        while at >= 0:
            i = at - 1
            if i >= 0 and raw[i] == "-":
                i -= 1
            while i >= 0 and raw[i] in " \t\r\n":
                i -= 1
            if i >= 0 and raw[i] in ":[,":
                return True
            at = raw.find(word, at + len(word))
    return False


_NOT_REGULAR = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISDIR, "a folder"), (stat.S_ISSOCK, "a socket"),
                (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _not_regular(mode: int) -> str:
    return next((what for test, what in _NOT_REGULAR if test(mode)), "not a regular file")


def _stat_error(path: Path, e: OSError) -> str:
    """Why ``path`` cannot be looked at, for people: a loop of symbolic links and a link to nothing
    named as such."""
    if e.errno == errno.ELOOP:
        return f"{path}: a symbolic link that loops (it leads back to itself): nothing there can be read"
    if e.errno == errno.ENOENT and os.path.islink(path):
        return f"{path}: a symbolic link to {os.readlink(path)!r}, which does not exist"
    return f"{path}: cannot read: {e.strerror or e}"


def load(path: Path) -> AnyStored:
    """The record in the file at ``path``; :class:`RecordError` naming the file (and the field) for
    anything else. Only a regular file is opened: a named pipe (which would block the reader until
    something wrote to it), a folder or a device is refused from its ``stat`` alone."""
    path = path if isinstance(path, Path) else Path(path)
    return loads(read_text(path), path)


def read_text(path: Path) -> str:
    """A record file's JSON text (inflated when compressed), not yet parsed; see :func:`load`."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise RecordError(_stat_error(path, e)) from e
    if not stat.S_ISREG(mode):
        raise RecordError(f"{path}: {_not_regular(mode)}, not a file: not a work-log record (not opened)")
    try:
        raw_bytes = record_bytes(path.read_bytes(), path)
    except OSError as e:
        raise RecordError(f"{path}: cannot read: {e.strerror or e}") from e
    try:
        return raw_bytes.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RecordError(f"{path}: not UTF-8 text (byte {e.start} is {raw_bytes[e.start]:#04x}): "
                          "not a work-log record") from None


def loads(raw: str, path: Path) -> AnyStored:
    """A record from its JSON text (``path`` names it in errors), checked for sense (:func:`check_sense`);
    see :func:`load`. Whatever in the text stops it from being read (an integer literal longer than
    Python reads, say) is a :class:`RecordError` naming the file, never another exception."""
    try:
        record = _loads(raw, path)
    except RecordError:
        raise
    except (ValueError, RecursionError, OverflowError, TypeError) as e:  # what no check above foresaw
        raise RecordError(f"{path}: cannot be read as a record ({type(e).__name__}: {e})") from e
    check_sense(record, path)
    return record


_KEY_BEFORE = re.compile(r'"([^"\\]*)"\s*:\s*-?$')


def _long_integer(raw: str, path: Path) -> RecordError:
    """The error for an integer literal longer than Python converts (``sys.get_int_max_str_digits``),
    naming the field it is the value of when the text says."""
    limit = sys.get_int_max_str_digits()
    found = re.search(r"\d{%d,}" % (limit + 1), raw) if limit else None
    if found is None:
        return RecordError(f"{path}: an integer literal of more than {limit:,} digits: not a work-log record")
    key = _KEY_BEFORE.search(raw, max(0, found.start() - 200), found.start())
    field = f"field '{key.group(1)}'" if key else "a value"
    line = f" (line {raw.count(chr(10), 0, found.start()) + 1})" if "\n" in raw.rstrip() else ""
    return RecordError(f"{path}: {field}{line} is an integer literal of {len(found.group()):,} digits, "
                       f"more than the {limit:,} a number is read with: not a work-log record")


def _loads(raw: str, path: Path) -> AnyStored:
    if not _has_constant(raw) and '"schema_version"' in raw:
        # the common case, one pass in pydantic's own parser: a record that validates, current or of
        # schema 1 (the same fields: only its version numbers change, as _migrate says)
        try:
            record = _ADAPTER.validate_json(raw, strict=True, context={"path": str(path)})
        except ValidationError:
            pass  # the reading below says why, field by field
        else:
            if record.schema_version == SCHEMA_VERSION:
                return record
            if record.schema_version == 1:
                return _bumped(record)
    constants: list[str] = []  # NaN, Infinity, -Infinity: JSON has none, Python's json reads them

    def constant(token: str) -> float:
        constants.append(token)
        return float(token)

    try:
        data = json.loads(raw, parse_constant=constant)
    except json.JSONDecodeError as e:
        raise RecordError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from e
    except RecursionError:
        raise RecordError(f"{path}: JSON nested too deeply to be a work-log record") from None
    except ValueError as e:  # an integer literal of more digits than int() converts
        if "digits" in str(e):
            raise _long_integer(raw, path) from None
        raise RecordError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: expected a JSON object, found {type(data).__name__}")
    # (a literal too large for a float, 1e400, reads as inf here unnoticed; the strict validation
    # below refuses it, naming the field: "Input should be a finite number")
    bad = _nonfinite(data) if constants else None
    if bad is not None:
        where = ".".join(str(k) for k in bad[0])
        raise RecordError(f"{path}: field '{where}' is {json.dumps(bad[1])}: records hold finite numbers only")
    migrated = _migrate(data, path)
    if migrated.get("kind") not in KINDS:
        raise RecordError(f"{path}: field 'kind' is {migrated.get('kind')!r}; expected "
                          + ", ".join(repr(k) for k in KINDS[:-1]) + f" or {KINDS[-1]!r}")
    try:
        # strict: JSON's own types only (a date is an ISO string; "0.5" is not a number)
        return _ADAPTER.validate_json(raw if migrated is data else json.dumps(migrated), strict=True,
                                      context={"path": str(path)})
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"][1:]) or "(top level)"
        more = f" (and {e.error_count() - 1} more problems)" if e.error_count() > 1 else ""
        raise RecordError(f"{path}: field '{loc}': {first['msg']}{more}") from e


# --------------------------------------------------------------------------- sense

# how far a statistic may lie outside its samples' range, relative to the range's top, for float rounding
_SLACK = 1e-9


# a run's work rate as a share of the ceiling measured on its GPU (copy bandwidth, cuBLAS's matmul rate):
# a kernel may pass the measured ceiling (cuBLAS leaves part of the peak unused), but the datasheet peaks of
# the cards we record sit well under twice it, so a record above this describes no measurement
MAX_SHARE_OF_CEILING = 2.0


def check_sense(record: AnyStored, path: Path) -> None:
    """Refuse (:class:`RecordError`, naming the file and the field) a record that validates but cannot
    be true: of a run, its timing's, each peer's and each probe's (:func:`timing_nonsense`). The
    loader applies it to every record it reads, so a hand-edited mean of -1 ms, or one outside the
    samples it claims to be the mean of, is left out like any other bad file instead of reaching a
    report as -8,796 TFLOP/s or 236 % of a ceiling."""
    if not isinstance(record, Run):
        return
    for where, derived in (("derived", record.derived), *((f"peers.{i}.derived", p.derived)
                                                          for i, p in enumerate(record.peers))):
        share = derived.fraction_of_ceiling if derived is not None else None
        if share is not None and share > MAX_SHARE_OF_CEILING:
            raise RecordError(f"{path}: field '{where}.fraction_of_ceiling' is {share:.3g}: {share:.1f} times the "
                              f"{derived.ceiling} ceiling measured on its GPU, which no kernel reaches (more than "
                              f"{MAX_SHARE_OF_CEILING:g} times is refused): not a measurement")
    for i, timing in enumerate(_timings(record)):
        if timing is None:
            continue
        try:
            why = timing_nonsense(timing)
        except PackedArrayError as e:
            where = _timing_field(record, i)
            raise RecordError(str(e) if str(path) in str(e) else f"{path}: field '{where}.samples_ms': {e}") from None
        if why is not None:
            raise RecordError(f"{path}: field '{_timing_field(record, i)}.{why[0]}' {why[1]}")


def _timings(run: Run) -> list[TimingStats | None]:
    """A run's timings: its own, each peer's, each probe's (:func:`_timing_field` names them)."""
    return [run.timing, *(r.timing for r in run.peers), *(r.timing for r in run.probes)]


def _timing_field(run: Run, i: int) -> str:
    """The field of :func:`_timings`'s ``i``-th timing, named only for a timing that fails."""
    if i == 0:
        return "timing"
    i -= 1
    return f"peers.{i}.timing" if i < len(run.peers) else f"probes.{i - len(run.peers)}.timing"


def timing_nonsense(t: TimingStats) -> tuple[str, str] | None:
    """The first statistic of a timing that cannot be true, as (field, why), or None. The times (mean,
    median, max) are finite and positive, the min finite and not negative (a sample can round to
    0); the spreads (std, stderr) are not negative; mean, median and quantiles lie within
    [min_ms, max_ms] (to a relative 1e-9); n is at least 1 and the number of samples. The samples
    themselves are not decoded (listing runs reads none): a packed array is counted now only when
    its text is a few characters long (one of no samples among them), and otherwise held to ``n``
    when it is decoded (:meth:`FloatArray.expect`); samples in memory (a record that wrote them as a
    list, or a short packed text) are counted and compared with min_ms and max_ms now."""
    lo, hi, mean, median, n = t.min_ms, t.max_ms, t.mean_ms, t.median_ms, t.n
    slack = _SLACK * hi
    low, high = lo - slack, hi + slack
    # the common case in one expression (a NaN fails every comparison); the reasons one by one below
    q = t.quantiles_ms.values()
    if (0 <= lo <= hi < math.inf and mean > 0 and median > 0 and t.std_ms >= 0 and t.stderr_ms >= 0
            and low <= mean <= high and low <= median <= high and n >= 1
            and low <= min(q, default=lo) and max(q, default=hi) <= high):
        return _samples_nonsense(t)
    for name in ("mean_ms", "median_ms", "max_ms"):
        x = getattr(t, name)
        if not (math.isfinite(x) and x > 0):
            return name, f"is {x!r}: a time is a positive number of milliseconds"
    if not (math.isfinite(lo) and lo >= 0):
        return "min_ms", f"is {lo!r}: a time is not negative"
    if lo > hi:
        return "min_ms", f"is {lo!r}, above max_ms ({hi!r})"
    for name in ("std_ms", "stderr_ms"):
        x = getattr(t, name)
        if not (math.isfinite(x) and x >= 0):
            return name, f"is {x!r}: a spread is not negative"
    inside = [("mean_ms", mean), ("median_ms", median), *((f"quantiles_ms.{k}", v) for k, v in t.quantiles_ms.items())]
    for name, x in inside:
        if not (low <= x <= high):
            return name, f"is {x!r}, outside the range of its samples, {lo!r} to {hi!r} ms (min_ms to max_ms)"
    if n < 1:
        return "n", f"is {n}: statistics of no samples"
    return _samples_nonsense(t)


def _samples_nonsense(t: TimingStats) -> tuple[str, str] | None:
    """The samples of a timing whose statistics make sense: as many as ``n`` says, and, when already
    in memory, their smallest and largest those that min_ms and max_ms say."""
    lo, hi, slack = t.min_ms, t.max_ms, _SLACK * t.max_ms
    count = t.samples_ms.expect(t.n)
    if count is not None:
        return "samples_ms", f"holds {count} samples where n is {t.n}"
    samples = t.samples_ms.decoded()
    if samples:
        for name, stated, actual in (("min_ms", lo, min(samples)), ("max_ms", hi, max(samples))):
            if abs(stated - actual) > slack:
                return name, f"is {stated!r} where the samples' {name[:3]} is {actual!r}"
    return None


# --------------------------------------------------------------------------- paths


def run_path(logs: Path, run: Run) -> Path:
    return logs / run.assignment / run.version / f"{run.run_id}{SUFFIX}"


def sweep_path(logs: Path, sweep: Sweep) -> Path:
    return logs / sweep.assignment / sweep.version / "sweeps" / f"{sweep.run_id}{SUFFIX}"


def crosscheck_path(logs: Path, check: CrossCheck) -> Path:
    return logs / check.assignment / check.version / "crosschecks" / f"{check.run_id}{SUFFIX}"


def reverification_path(logs: Path, rv: Reverification) -> Path:
    return logs / rv.assignment / rv.version / "reverify" / f"{rv.run_id}{SUFFIX}"


def same_code_path(logs: Path, proof: SameCode) -> Path:
    return logs / proof.assignment / proof.version / "same_code" / f"{proof.run_id}{SUFFIX}"


def ceilings_path(logs: Path, ceilings: DeviceCeilings) -> Path:
    return logs / "devices" / ceilings.device.slug / f"{utc_stamp(ceilings.created_utc)}{SUFFIX}"


def microbench_path(logs: Path, mb: Microbench) -> Path:
    return logs / "devices" / mb.device.slug / "microbench" / f"{mb.run_id}{SUFFIX}"


def probes_folder(logs: Path, gpu: str) -> Path:
    return logs / "devices" / gpu / "probes"


def probe_path(logs: Path, probe: ProbeRecord) -> Path:
    return probes_folder(logs, probe.gpu) / f"{probe.run_id}{SUFFIX}"


# --------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class Stored:
    path: Path
    record: AnyStored


def _records(folder: Path, pattern: str, legacy: LegacyCaseKeys | None = None, *,
             assignment: str | None = None, version_depth: int = 0) -> Iterable[Stored]:
    """The records matching ``pattern`` under ``folder``, skipping (with a :class:`RecordSkipped`
    warning) every file that cannot be loaded and, when ``assignment`` is given, every record whose
    assignment is not it or whose version is not the folder ``version_depth`` levels above the file."""
    if not _folders_readable(folder, pattern):
        return
    # pattern names the plain form; glob's strings, not Path.glob: a listing reads hundreds of names
    base = os.path.join(glob.escape(str(folder)), pattern)
    found = sorted({*glob.glob(base), *glob.glob(base + ".gz")})
    both = {name[:-len(SUFFIX)] for name in found if name.endswith(SUFFIX)}
    paths = []
    for name in found:
        p = Path(name)
        if p.name.startswith("."):  # glob leaves these out already; a pattern that names one would not
            continue
        if name.endswith(PLAIN_SUFFIX) and name[:-len(PLAIN_SUFFIX)] in both:
            _skip(f"{p}: the same record's name as {stem(p)}{SUFFIX} beside it; left out (remove one of the two: "
                  "`report migrate` leaves only the compressed one)")
            continue
        paths.append(p)
    with _collector_paused():
        loaded = [(p, _load_or_error(p)) for p in paths]
    # a probe's attachments are its own files, whatever they hold (another tool's JSON, a run kept as it
    # was): never records of the folder they lie in
    attached = {p.parent / a for p, r in loaded if isinstance(r, ProbeRecord) for a in r.attachments}
    for p, record in loaded:
        if p in attached:
            continue
        if isinstance(record, RecordError):
            _skip(f"{record}; left out")
            continue
        if assignment is not None:
            folder_version = p.parents[version_depth].name
            mine = (getattr(record, "assignment", assignment), getattr(record, "version", folder_version))
            if mine != (assignment, folder_version):
                _skip(f"{p}: a record of {mine[0]}/{mine[1]} under logs/{assignment}/{folder_version}/; left out "
                      "(move it to its own folder)")
                continue
        if legacy and isinstance(record, (Run, Sweep)):
            record.case = legacy.apply(record.case)  # an older record names its case keys as they were then
        yield Stored(p, record)


def _load_or_error(path: Path) -> AnyStored | RecordError:
    try:
        return load(path)
    except RecordError as e:
        return e


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector held off while a batch of records is read: reading hundreds makes
    hundreds of thousands of objects and no cycle among them, and the collector would walk the
    growing heap again and again for nothing (about a sixth of the time `report list` takes)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _folders_readable(folder: Path, pattern: str) -> bool:
    """Whether ``folder`` can be searched, warning (:class:`RecordSkipped`) when it, or a folder the
    first step of ``pattern`` reaches in it, is a loop of symbolic links or a link to nothing: a glob
    passes over those in silence, and an assignment's runs would read as none at all. A folder that
    is simply not there is no warning (no runs yet)."""
    why = _folder_problem(folder)
    if why is not None:
        if why:
            _skip(f"{why}; the records under it left out")
        return False
    first, sep, _ = pattern.partition("/")
    if not sep:
        return True
    if any(c in first for c in "*?["):
        with os.scandir(folder) as entries:
            below = [Path(e.path) for e in entries if e.is_symlink()]  # only a link can loop or lead nowhere
    else:
        below = [folder / first]
    for p in below:
        why = _folder_problem(p)
        if why:
            _skip(f"{why}; the records under it left out")
    return True


def _folder_problem(folder: Path) -> str | None:
    """None for a folder that can be read, '' for one that is not there, else why not."""
    try:
        os.stat(folder)
    except FileNotFoundError as e:
        return _stat_error(folder, e) if os.path.islink(folder) else ""
    except OSError as e:
        return _stat_error(folder, e)
    return None


def runs(logs: Path, assignment: str, version: str | None = None, *,
         legacy: LegacyCaseKeys | None = None, case: str | None = None) -> list[Run]:
    """Every run of an assignment (or of one version), oldest first; ``legacy`` renames the case
    keys of records made before the assignment's keys changed (see ``LegacyCaseKeys``). ``case``:
    only the runs of that case, read from the files whose name says so (``<utc>_<gpu>_<case>.json``,
    as every run is named) and no other."""
    base = Path(logs) / assignment
    name = f"*_{case}.json" if case else "*.json"
    pattern = f"{version}/{name}" if version else f"*/{name}"
    out = [s.record for s in _records(base, pattern, legacy, assignment=assignment) if isinstance(s.record, Run)
           and (case is None or s.record.case_name == case)]
    return sorted(out, key=lambda r: r.created_utc)


def recorded_cases(logs: Path, assignment: str) -> list[str]:
    """The cases an assignment's runs were made on, from their files' names alone (a run's file is
    ``<utc>_<gpu>_<case>.json.gz``): what a command checks a --case against before it reads records."""
    names = glob.glob(os.path.join(glob.escape(str(Path(logs) / assignment)), "*", "*.json*"))
    out = set()
    for name in names:
        parts = stem(Path(name)).split("_", 2)
        if len(parts) == 3 and is_record_name(name):
            out.add(parts[2])
    return sorted(out)


def sweeps(logs: Path, assignment: str, version: str | None = None, *,
           legacy: LegacyCaseKeys | None = None) -> list[Sweep]:
    base = Path(logs) / assignment
    pattern = f"{version}/sweeps/*.json" if version else "*/sweeps/*.json"
    out = [s.record for s in _records(base, pattern, legacy, assignment=assignment, version_depth=1)
           if isinstance(s.record, Sweep)]
    return sorted(out, key=lambda r: r.created_utc)


def crosschecks(logs: Path, assignment: str, version: str | None = None) -> list[CrossCheck]:
    """Every cross-check of an assignment (or of one version), oldest first."""
    return _beside_versions(logs, assignment, version, "crosschecks", CrossCheck)


def reverifications(logs: Path, assignment: str, version: str | None = None) -> list[Reverification]:
    """Every re-verification of an assignment (or of one version), oldest first."""
    return _beside_versions(logs, assignment, version, "reverify", Reverification)


def same_code(logs: Path, assignment: str, version: str | None = None) -> list[SameCode]:
    """Every same-code proof of an assignment (or of one version), oldest first."""
    return _beside_versions(logs, assignment, version, "same_code", SameCode)


def _beside_versions(logs: Path, assignment: str, version: str | None, folder: str, kind: type[R]) -> list[R]:
    """The records of one kind kept in ``<version>/<folder>/`` (of one version or all), oldest first."""
    pattern = f"{version}/{folder}/*.json" if version else f"*/{folder}/*.json"
    out = [s.record for s in _records(Path(logs) / assignment, pattern, assignment=assignment, version_depth=1)
           if isinstance(s.record, kind)]
    return sorted(out, key=lambda c: c.created_utc)


def ceilings(logs: Path, gpu: str | None = None) -> list[DeviceCeilings]:
    folder = Path(logs) / "devices"
    pattern = f"{gpu}/*.json" if gpu else "*/*.json"
    out = [s.record for s in _records(folder, pattern) if isinstance(s.record, DeviceCeilings)]
    return sorted(out, key=lambda c: c.created_utc)


def latest_ceilings(logs: Path, device_name: str, gpu: str) -> tuple[Path, DeviceCeilings] | None:
    folder = Path(logs) / "devices"
    found = [s for s in _records(folder, f"{gpu}/*.json")
             if isinstance(s.record, DeviceCeilings) and s.record.device.name == device_name]
    if not found:
        return None
    s = max(found, key=lambda s: s.record.created_utc)
    return s.path, s.record  # type: ignore[return-value]


def microbenches(logs: Path, gpu: str | None = None) -> list[Microbench]:
    """Every micro-benchmark record (of one GPU, or all), oldest first."""
    folder = Path(logs) / "devices"
    pattern = f"{gpu}/microbench/*.json" if gpu else "*/microbench/*.json"
    out = []
    for s in _records(folder, pattern):
        if isinstance(s.record, Microbench):
            if s.record.device.slug != s.path.parents[1].name:
                _skip(f"{s.path}: a micro-benchmark of {s.record.device.slug} under logs/devices/{s.path.parents[1].name}/; "
                      "left out (move it to its own folder)")
                continue
            out.append(s.record)
    return sorted(out, key=lambda m: m.created_utc)


def probes(logs: Path, gpu: str | None = None) -> list[ProbeRecord]:
    """Every probe record (of one GPU, or all), oldest first. The other files a probe kept beside
    its record (a table, a profiler's CSV) are not records and are not read here."""
    folder = Path(logs) / "devices"
    pattern = f"{gpu}/probes/*.json" if gpu else "*/probes/*.json"
    out = []
    for s in _records(folder, pattern):
        if isinstance(s.record, ProbeRecord):
            if s.record.gpu != s.path.parents[1].name:
                _skip(f"{s.path}: a probe of {s.record.gpu} under logs/devices/{s.path.parents[1].name}/; left out "
                      "(move it to its own folder)")
                continue
            out.append(s.record)
    return sorted(out, key=lambda p: p.created_utc)
