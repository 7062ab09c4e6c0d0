"""A worklog can neither crash nor hang a build: text that is not UTF-8, a byte-order mark, and
expressions jinja would fold at compile time (an undefined constant, an overflow, a huge or endless
power) each end in one error naming the worklog, never a traceback, a hang, or 'inf' in the report.

Each case is bound through the binder's own reader (:func:`reporter.render.worklog.parse`) on a
temporary copy of the smallest assignment (swiglu: one version, a few records); one goes through
`report build`, to show the command stops with that line and writes nothing."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from reporter.analysis.facts import binding_context
from reporter.analysis.summary import summarize
from reporter.assignments import get_assignment
from reporter.render import worklog
from reporter.render.worklog import WorklogError, parse, read_meta

FRONT = "---\ntitle: Hostile\nauthors: [Ann]\ngpu: h100\n---\n\n## v01_reference\n\n"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """A project holding only swiglu: its kernels folder and its records."""
    root = tmp_path_factory.mktemp("hostile")
    shutil.copytree(ROOT / "kernels" / "swiglu", root / "kernels" / "swiglu",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "logs" / "swiglu", root / "logs" / "swiglu")
    (root / "report_templates").symlink_to(ROOT / "report_templates")
    return root


@pytest.fixture(scope="module")
def ctx(tiny):
    a = get_assignment(tiny / "kernels", "swiglu")
    return binding_context(summarize(a, tiny / "logs", "h100"))


@pytest.fixture
def wl(tiny) -> Path:
    p = tiny / "kernels" / "swiglu" / "worklog.md"
    old = p.read_bytes()
    yield p
    p.write_bytes(old)


def _refused(p: Path, ctx, match: str, seconds: float = 5.0) -> str:
    t0 = time.monotonic()
    with pytest.raises(WorklogError) as e:
        parse(p, ctx)
    assert time.monotonic() - t0 < seconds
    msg = str(e.value)
    assert msg.startswith(f"{p}"), msg
    assert "\n" not in msg and "Traceback" not in msg, msg
    assert match in msg, msg
    return msg


def test_a_worklog_that_is_not_utf8_names_the_byte(wl, ctx):
    wl.write_bytes(FRONT.encode() + b"It took 3 \xb5s.\n")
    offset = len(FRONT.encode()) + len(b"It took 3 ")
    msg = _refused(wl, ctx, f"not UTF-8 text (byte {offset} is 0xb5)")
    with pytest.raises(WorklogError, match=r"not UTF-8 text \(byte \d+ is 0xb5\)"):
        read_meta(wl)  # the build reads the target GPU first
    assert msg.startswith(f"{wl}: ")


def test_a_byte_order_mark_is_accepted_and_stripped(wl, ctx):
    wl.write_bytes(b"\xef\xbb\xbf" + FRONT.encode() + b"It takes {{ v01.ms }} ms.\n")
    got = parse(wl, ctx)
    assert got.title == "Hostile" and got.authors == ["Ann"] and got.meta["gpu"] == "h100"
    assert list(got.versions) == ["v01"] and "\ufeff" not in got.versions["v01"].markdown
    assert read_meta(wl)["gpu"] == "h100"


def test_a_constant_undefined_attribute_is_an_error_not_a_traceback(wl, ctx):
    wl.write_text(FRONT + "text\n{{ \"\" ~ none.x }}\n")
    _refused(wl, ctx, "worklog.md:")


def test_an_overflowing_constant_in_a_comparison_is_an_error(wl, ctx):
    wl.write_text(FRONT + "text\n{{ 1e308*10 > v01.ms }}\n")
    msg = _refused(wl, ctx, "worklog.md:10:")
    assert "finite" in msg or "overflow" in msg or "too large" in msg, msg


def test_a_power_too_large_to_print_is_an_error(wl, ctx):
    wl.write_text(FRONT + "text\n{{ 10 ** 5000 }}\n")
    msg = _refused(wl, ctx, "worklog.md:10:")
    assert "too large" in msg, msg


def test_an_endless_power_is_refused_at_once(wl, ctx):
    wl.write_text(FRONT + "text\n{{ 9 ** (9 ** 9) }}\n")
    msg = _refused(wl, ctx, "worklog.md:10:", seconds=2.0)
    assert "too large" in msg, msg


def test_an_overflow_to_inf_is_never_printed(wl, ctx):
    wl.write_text(FRONT + "text\n{{ 1e308 * 10 }}\n")
    msg = _refused(wl, ctx, "worklog.md:10:")
    assert "inf" not in msg.split(": ", 1)[1].replace("1e308", "") or "finite" in msg, msg


def test_a_number_literal_too_large_for_a_float_is_an_error(wl, ctx):
    wl.write_text(FRONT + "text\n{{ 1e400 }}\n")
    _refused(wl, ctx, "worklog.md:10:")


def test_small_arithmetic_still_binds(wl, ctx):
    wl.write_text(FRONT + "{{ 2 ** 10 }} {{ 1e300 * 10 }} {{ (v01.ms * 1000) | round(1) }} {{ 'ab' * 3 }}\n")
    got = parse(wl, ctx).versions["v01"].markdown.strip()
    assert got.startswith("1024 1e+301 ") and got.endswith(" ababab")


def test_an_endless_loop_is_stopped_by_the_time_limit(wl, ctx, monkeypatch):
    monkeypatch.setattr(worklog, "TIME_LIMIT_S", 0.5)
    wl.write_text(FRONT + "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}\n")
    _refused(wl, ctx, "took longer than", seconds=5.0)


def test_report_build_stops_with_the_line_and_writes_nothing(tiny, wl):
    from reporter.cli import app

    wl.write_text(FRONT + "text\n{{ 9 ** (9 ** 9) }}\n")
    out = tiny / "out"
    result = CliRunner().invoke(app, ["build", "swiglu", "--root", str(tiny), "--out", str(out), "--html-only"])
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "worklog.md:10:" in result.output and "too large" in result.output, result.output
    assert not (out / "worklog.html").exists()
