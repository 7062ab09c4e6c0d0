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

from conftest import ROOT
from reporter.analysis.facts import binding_context
from reporter.analysis.summary import summarize
from reporter.assignments import get_assignment
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
