"""Property-based tests (issue 16, part 5): arbitrary input to the record loader, the worklog
binder and the CLI's numeric options gives a valid object or our own clear error, never a
traceback. Sized to take seconds, not minutes, in CI; ``FUZZ_EXAMPLES=5000`` (``make fuzz``) runs
every target on that many examples."""

from __future__ import annotations

import gzip
import json
import math
import os
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from reporter import store
from reporter.analysis.facts import binding_context
from reporter.analysis.summary import summarize
from reporter.assignments import get_assignment
from reporter.cli import app
from reporter.records import Run
from reporter.render.worklog import WorklogError, bind

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0"))  # 0: each target's own CI size
FAST = settings(max_examples=EXAMPLES or 150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SOURCE = min((ROOT / "logs" / "transform" / "v10_hw_cvt").glob("*_h100_test_tiny.json.gz"))
REAL = json.loads(store.read_text(SOURCE))
REAL_TEXT = store.read_text(SOURCE).encode()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _load_bytes(data: bytes, name: str = "r.json") -> object:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / name
        p.write_bytes(data)
        try:
            return store.load(p)
        except store.RecordError as e:
            assert str(e).startswith(str(p)), str(e)  # the message names the file
            return e


@FAST
@given(st.binary(max_size=600))
def test_any_bytes_load_as_a_record_or_our_error(data):
    _load_bytes(data)


@FAST
@given(json_values)
def test_any_json_loads_as_a_record_or_our_error(value):
    _load_bytes(json.dumps(value).encode())


@FAST
@given(st.one_of(st.binary(max_size=600), st.binary(max_size=600).map(lambda b: gzip.compress(b, mtime=0)),
                 json_values.map(lambda v: gzip.compress(json.dumps(v).encode(), mtime=0)[:-3]),
                 st.binary(max_size=300).map(lambda b: gzip.compress(REAL_TEXT[: len(b)] + b, mtime=0))))
def test_any_bytes_under_a_compressed_name_load_or_give_our_error(data):
    """What a ``.json.gz`` file may hold: any bytes, gzip of any bytes or of JSON cut short, gzip of
    a real record cut and continued with noise."""
    _load_bytes(data, "r.json.gz")


@FAST
@given(st.sampled_from(["run", "sweep", "ceilings", "crosscheck", "reverification", "other"]),
       st.dictionaries(st.sampled_from(sorted(REAL)), json_values, max_size=6))
def test_json_shaped_like_a_record_loads_or_names_a_field(kind, fields):
    """Past the schema_version and kind checks: every error names a field (or the kind)."""
    out = _load_bytes(json.dumps({**fields, "schema_version": 1, "kind": kind}).encode())
    if isinstance(out, store.RecordError):
        assert "field '" in str(out), str(out)


def _leaves(x: object, where: tuple = ()) -> list[tuple]:
    if isinstance(x, dict):
        return [p for k, v in x.items() for p in _leaves(v, (*where, k))]
    if isinstance(x, list):
        return [p for i, v in enumerate(x) for p in _leaves(v, (*where, i))]
    return [where]


LEAVES = _leaves(REAL)


@FAST
@given(st.sampled_from(LEAVES), json_values)
def test_a_real_record_with_one_value_changed_loads_or_names_a_field(where, value):
    """One leaf of a real run replaced by an arbitrary JSON value: the record loads (the value
    fits the field) or the error names a field."""
    data = json.loads(store.read_text(SOURCE))
    target = data
    for k in where[:-1]:
        target = target[k]
    if where:
        target[where[-1]] = value
    out = _load_bytes(json.dumps(data).encode())
    assert isinstance(out, (Run, store.RecordError))
    if isinstance(out, store.RecordError):  # the JSON is valid: the error is about a field
        assert "field '" in str(out), str(out)


@pytest.fixture(scope="module")
def ctx():
    return binding_context(summarize(get_assignment(ROOT / "kernels", "transform"), ROOT / "logs", "h100"))


TOKENS = ["{{", "}}", "{%", "%}", " ", "\n", "if", "endif", "for", "endfor", "in", "set", "=", "v02", "v10",
          "peers", "best", "ceilings", ".ms", ".us", ".held()", ".at('2026')", ".probe('copy_bulk')", "(", ")", "[",
          "]", "'", '"', "|", "format", "int", "round", "%", "1", "0", "-", "/", "*", "**", "x", "__class__",
          "speedup_over('v01')", "metric('dram__bytes.sum')", "reference", ".label", "## v42_ghost", "#"]


@FAST
@given(st.lists(st.sampled_from(TOKENS), max_size=25).map("".join))
def test_any_worklog_text_binds_or_names_its_line(ctx, text):
    try:
        out = bind(text, ctx, Path("w.md"))
    except WorklogError as e:
        assert str(e).startswith("w.md"), str(e)
    else:
        assert isinstance(out, str)


@FAST
@given(st.text(max_size=200))
def test_any_plain_text_binds_or_names_its_line(ctx, text):
    try:
        bind(text, ctx, Path("w.md"))
    except WorklogError as e:
        assert str(e).startswith("w.md"), str(e)


runner = CliRunner()


@settings(max_examples=EXAMPLES or 60, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.text(max_size=12)))
@example("𑛀")  # a digit of another script: float() reads 0.0, the option refuses it (found by CI's run)
def test_any_value_of_a_numeric_option_is_parsed_or_refused_in_one_line(value):
    """`--min-effect VALUE` on an assignment that does not exist: the option is refused (exit 2,
    usage error) or accepted and the command stops at the missing assignment (exit 2, one line)."""
    result = runner.invoke(app, ["diff", "no_such_assignment", "v01", "v02", "--min-effect", value,
                                 "--root", str(ROOT)])
    assert result.exit_code == 2, (value, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), (value, result.exception)
    said = " ".join(result.output.split())
    try:
        number = float(value)
    except ValueError:
        return  # not a number: click's own usage error
    if not value.isascii():
        return  # float() reads other scripts' digits ('𑛀' is 0.0); the option's parser refuses them: a usage error
    if value.startswith("-") and not value[1:2].isdigit() and value[1:2] != ".":
        return  # '-inf', '-nan': read as an option name by click
    if not math.isfinite(number):
        assert "not a finite number" in said, (value, said)
    elif number < 0:
        assert "is below 0" in said, (value, said)
    elif number > 100:
        assert "is above 100" in said, (value, said)
    else:
        assert "no_such_assignment" in said and "Invalid value" not in said, (value, said)
