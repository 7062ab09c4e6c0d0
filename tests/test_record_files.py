"""Bad files under logs/ (issue 16, part 2): each is refused with the file and the field named,
and a query goes on past it with a warning, so one stray file never hides the good ones."""

from __future__ import annotations

import base64
import gzip
import json
import math
import shutil
import struct
import zlib
from pathlib import Path

import pytest
from conftest import LOGS, ROOT, with_sources
from pydantic import ValidationError
from typer.testing import CliRunner

from reporter import packed, sources, store
from reporter.cli import app
from reporter.records import TimingStats
from reporter.store import RecordError, RecordSkipped

runner = CliRunner()
SOURCE = min((ROOT / "logs" / "transform" / "v10_hw_cvt").glob("*_h100_benchmark.json.gz"))


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """logs/ with transform's v10 and v11 runs (no sweeps) and the device ceilings."""
    for v in ("v10_hw_cvt", "v11_two_groups"):
        dst = tmp_path / "logs" / "transform" / v
        dst.mkdir(parents=True)
        for p in (ROOT / "logs" / "transform" / v).glob("*.json.gz"):
            shutil.copy(p, dst / p.name)
    shutil.copytree(ROOT / "logs" / "devices", tmp_path / "logs" / "devices")
    return tmp_path / "logs"


def _as_lists(x):
    """A stored record's JSON with its packed arrays written out as lists, as schema 1 wrote them
    (and still reads): the form a person edits."""
    if isinstance(x, str) and x.startswith(packed.PREFIX):
        return packed.unpack(x)
    if isinstance(x, dict):
        if set(x) == {"runs"}:
            return packed.read_reason_runs(x)
        return {k: _as_lists(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_as_lists(v) for v in x]
    return x


def _edited(tmp_path: Path, edit) -> Path:
    data = _as_lists(json.loads(store.read_text(SOURCE)))
    edit(data)
    p = tmp_path / "r.json"
    p.write_text(json.dumps(data))  # json.dumps writes NaN and Infinity as bare tokens
    return p


@pytest.mark.parametrize("value,shown", [(math.inf, "Infinity"), (-math.inf, "-Infinity"), (math.nan, "NaN")])
def test_a_number_that_is_not_finite_is_refused_naming_its_field(tmp_path, value, shown):
    def edit(d):
        d["timing"]["samples_ms"][3] = value

    with pytest.raises(RecordError, match=rf"field 'timing\.samples_ms\.3' is {shown}: records hold finite"):
        store.load(_edited(tmp_path, edit))


@pytest.mark.parametrize("where", ["samples_ms", "gpu_state"])
def test_a_number_that_is_not_finite_is_refused_after_any_separator(tmp_path, where):
    """A value of NaN is caught however the JSON is spaced: after a newline and indentation too."""
    def edit(d):
        if where == "samples_ms":
            d["timing"]["samples_ms"][0] = math.nan
        else:
            d["timing"]["gpu_state"]["power_w"][0] = -math.inf

    p = _edited(tmp_path, edit)
    p.write_text(json.dumps(json.loads(p.read_text()), indent=2))  # NaN now starts a line
    with pytest.raises(RecordError, match="records hold finite numbers only"):
        store.load(p)


def test_the_words_nan_and_infinity_inside_a_string_are_text(tmp_path):
    """A record embeds its sources; a comment saying 'writes NaN' is text, and the record loads whole
    (it used to send every v13 and v14 record down the slow path, which doubled `report list`)."""
    text = sources.read(LOGS, store.load(SOURCE).code.files[0])

    def edit(d):  # a schema-1 record, which embedded its sources
        d["schema_version"] = 1
        d["code"]["files"][0]["text"] = text + "\n// writes NaN for the sum; -Infinity, [NaN], x: NaN\n"

    r = store.load(_edited(tmp_path, edit))
    assert "writes NaN" in r.code.files[0].text  # type: ignore[union-attr]
    assert store._has_constant('{"a": [1,\n NaN]}') and store._has_constant('{"a":-Infinity}')
    assert not store._has_constant('{"a": "writes NaN", "b": "NaN", "c": "Infinity"}')


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_packed_array_holding_a_number_that_is_not_finite_is_refused_when_read(tmp_path, value):
    """Packed arrays are decoded when first read (listing records never decodes their samples):
    a NaN packed into one by hand is refused then, with the item named."""
    def edit(d):
        samples = d["timing"]["samples_ms"]
        samples[2] = value
        d["timing"]["samples_ms"] = "f64z:" + base64.b64encode(zlib.compress(struct.pack(f"<{len(samples)}d", *samples))).decode()

    r = store.load(_edited(tmp_path, edit))
    with pytest.raises(ValueError, match=r"r\.json: field samples_ms: item 2 of a packed array is .*: records hold "
                                         "finite numbers only"):
        r.timing.samples_ms[0]  # type: ignore[union-attr]


@pytest.mark.parametrize("text,why", [("f64z:not base64!", "does not decode"), ("f64z:" + "A" * 8, "does not decode"),
                                      ("floats", "starts with 'f64z:'")])
def test_a_packed_array_that_is_not_one_is_refused(tmp_path, text, why):
    def edit(d):
        d["timing"]["samples_ms"] = text

    try:
        r = store.load(_edited(tmp_path, edit))
        r.timing.samples_ms[0]  # type: ignore[union-attr]
    except (RecordError, ValueError) as e:
        assert why in str(e)
    else:
        pytest.fail("read a packed array that is not one")


def test_a_record_cannot_be_given_a_number_that_is_not_finite():
    r = store.load(SOURCE)
    with pytest.raises(ValidationError):
        r.timing.mean_ms = math.inf  # type: ignore[union-attr]
    with pytest.raises(ValidationError):
        TimingStats(**{**r.timing.model_dump(), "median_ms": math.nan})  # type: ignore[union-attr]


@pytest.mark.parametrize("field,value,message", [
    (("timing", "median_ms"), "0.5", "timing.median_ms"),
    (("check", "passed"), "yes", "check.passed"),
    (("created_utc",), 12, "created_utc"),
])
def test_values_of_the_wrong_type_are_not_converted(tmp_path, field, value, message):
    def edit(d):
        target = d
        for k in field[:-1]:
            target = target[k]
        target[field[-1]] = value

    with pytest.raises(RecordError, match=rf"field '{message}'"):
        store.load(_edited(tmp_path, edit))


@pytest.mark.parametrize("version,why", [(True, "not an integer"), (0, "start at 1"), (-3, "start at 1"),
                                         (99, "newer than this tool's")])
def test_schema_versions_outside_the_known_range_are_refused(tmp_path, version, why):
    with pytest.raises(RecordError, match=f"schema_version.*{why}"):
        store.load(_edited(tmp_path, lambda d: d.update(schema_version=version)))


def test_bytes_that_are_not_utf8_and_deep_nesting_are_refused(tmp_path):
    utf16 = tmp_path / "u.json"
    utf16.write_bytes(store.read_text(SOURCE).encode("utf-16"))
    with pytest.raises(RecordError, match=r"u\.json: not UTF-8 text \(byte 0 is 0xff\)"):
        store.load(utf16)
    deep = tmp_path / "d.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(RecordError, match=r"d\.json: JSON nested too deeply"):
        store.load(deep)


def test_one_bad_file_is_left_out_with_a_warning_and_the_good_ones_stay(logs):
    good = store.runs(logs, "transform", "v10_hw_cvt")
    stray = logs / "transform" / "v10_hw_cvt" / "20990101T000000000Z_h100_benchmark.json"
    stray.write_bytes(bytes(range(256)))
    with pytest.warns(RecordSkipped, match=rf"{stray.name}: not UTF-8 text.*left out"):
        again = store.runs(logs, "transform", "v10_hw_cvt")
    assert [r.run_id for r in again] == [r.run_id for r in good]


def test_a_record_in_another_versions_folder_is_set_aside(logs):
    """A v11 record copied under v10's folder is not a v10 run, and a histogram record under
    transform is not a transform run."""
    v11 = min((logs / "transform" / "v11_two_groups").glob("*.json.gz"))
    moved = logs / "transform" / "v10_hw_cvt" / v11.name
    shutil.copy(v11, moved)
    hist = min((ROOT / "logs" / "histogram" / "v05_persistent").glob("*.json.gz"))
    shutil.copy(hist, logs / "transform" / "v10_hw_cvt" / hist.name)
    with pytest.warns(RecordSkipped) as caught:
        runs = store.runs(logs, "transform", "v10_hw_cvt")
    assert {r.version for r in runs} == {"v10_hw_cvt"}
    said = "\n".join(str(w.message) for w in caught)
    assert f"{moved.name}: a record of transform/v11_two_groups under logs/transform/v10_hw_cvt/" in said
    assert f"{hist.name}: a record of histogram/v05_persistent under logs/transform/v10_hw_cvt/" in said


def test_the_cli_goes_on_past_a_bad_file_and_names_it(tmp_path):
    """`report list` and `report show` on a project with a broken file among the records (named as a
    run of the benchmark case, the files `list` reads): exit 0, the table, and one warning line naming
    the file."""
    for name in ("kernels", "report_templates"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "logs" / "transform", tmp_path / "logs" / "transform")
    shutil.copytree(ROOT / "logs" / "devices", tmp_path / "logs" / "devices")
    stray = tmp_path / "logs" / "transform" / "v10_hw_cvt" / "20990101T000000000Z_h100_benchmark.json"
    stray.write_text('{"schema_version": 1, "kind": "run", "median_ms": Infinity}')
    for args in (["list", "transform"], ["show", "transform", "v10"]):
        result = runner.invoke(app, [*args, "--root", str(tmp_path)])
        assert result.exit_code == 0, result.output
        assert "v10_hw_cvt" in result.stdout and stray.name not in result.stdout  # the table, on stdout
        warning = [line for line in " ".join(result.stderr.split()).split("warning:") if stray.name in line]
        assert len(warning) == 1 and "is Infinity" in warning[0] and "left out" in warning[0], result.output


def test_an_overflowing_literal_is_refused_naming_its_field(tmp_path):
    p = tmp_path / "r.json"
    text = store.read_text(SOURCE)
    head, tail = text.split('"median_ms":', 1)
    p.write_text(head + '"median_ms":1e400' + tail[tail.index(","):])
    with pytest.raises(RecordError, match=r"field 'timing\.median_ms': Input should be a finite number"):
        store.load(p)


def test_ncu_values_that_are_not_finite_are_no_figure():
    """A profile keeps its other metrics when ncu prints 'nan' or 'inf' for one (a record holds
    finite numbers only, so such a value becomes no figure instead of voiding the profile)."""
    from reporter.harness.profile import parse_metric, parse_number

    assert parse_number("nan") is None and parse_number("inf") is None and parse_number("-inf") is None
    assert parse_number("1,234.5") == 1234.5
    assert parse_metric("nan", "%") is None


# --------------------------------------------------------------------------- compressed records


def test_a_record_is_written_compressed_and_reads_back_the_same_as_a_plain_one(tmp_path):
    """save_new writes X.json.gz (gzip of the one line store.dumps gives); the same text as a plain
    X.json loads as the same record; a plain X.json already there takes the name, so the run moves on."""
    run = store.load(SOURCE)
    logs = with_sources(tmp_path / "logs")
    (logs / "transform" / "v10_hw_cvt").mkdir(parents=True)
    plain = store.run_path(logs, run).with_name(run.run_id + ".json")
    plain.write_text(store.dumps(run))
    path = store.save_new(run.model_copy(deep=True), logs)
    assert path.name.endswith(".json.gz") and store.stem(path) != store.stem(plain)  # moved on a millisecond
    assert path.read_bytes()[:2] == b"\x1f\x8b" and store.read_text(path) == store.dumps(store.load(path))
    assert store.load(plain).model_dump() == run.model_dump()


def test_a_plain_and_a_compressed_file_of_one_record_read_once_with_a_warning(logs):
    kept = min((logs / "transform" / "v10_hw_cvt").glob("*.json.gz"))
    plain = kept.with_name(store.stem(kept) + ".json")
    plain.write_text(store.read_text(kept))
    with pytest.warns(RecordSkipped, match=rf"{plain.name}: the same record's name as {kept.name} beside it"):
        runs = store.runs(logs, "transform", "v10_hw_cvt")
    assert [r.run_id for r in runs].count(store.stem(kept)) == 1


@pytest.mark.parametrize("make,said", [
    (lambda text: text.encode(), "not a gzip stream"),  # plain text under a .gz name
    (lambda text: gzip.compress(text.encode())[:-30], "cut short"),
    (lambda text: gzip.compress(text.encode()) + b"junk", "4 bytes after the end of the gzip stream"),
    (lambda text: gzip.compress(b" " * (store.MAX_RECORD_BYTES + 1)), "inflates to more than 64 MiB"),
])
def test_a_compressed_file_that_is_no_record_is_refused_naming_it(tmp_path, make, said):
    """Bad gzip is a RecordError naming the file, and a stream that would inflate without end (a
    decompression bomb) is stopped at the limit, not read into memory."""
    p = tmp_path / "r.json.gz"
    p.write_bytes(make(store.read_text(SOURCE)))
    with pytest.raises(RecordError, match=rf"r\.json\.gz: .*{said}"):
        store.load(p)
