"""One question, one answer: every figure, ratio and verdict a report prints is marked with what it
stands for (reporter.render.ledger), and `report build` fails when one thing is printed two ways.
On the committed reports and on contradictions made on purpose."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup
from conftest import ROOT
from typer.testing import CliRunner

from reporter.analysis.compare import compare_versions
from reporter.analysis.diff import ratio_words
from reporter.analysis.summary import summarize
from reporter.assignments import get_assignment
from reporter.cli import app
from reporter.render import ledger

ASSIGNMENTS = ("flashattn", "histogram", "transform")


# --------------------------------------------------------------------------- the check itself


def _doc(*marks: tuple[str, str, str]) -> str:
    return " ".join(str(ledger.mark(k, t, unit=u)) for k, t, u in marks)


def test_rounding_is_the_only_allowed_difference():
    same = _doc(("fig:v1:b", "13.72 ms", ""), ("fig:v1:b", "13.7241", "ms"), ("fig:v1:b", "13,724 µs", ""))
    assert ledger.contradictions(same) == []
    two = _doc(("fig:v1:b", "13.72 ms", ""), ("fig:v1:b", "13.85 ms", ""))
    (c,) = ledger.contradictions(two)
    assert c.key == "fig:v1:b" and "'13.72 ms'" in str(c) and "'13.85 ms'" in str(c)


def test_ratios_compare_as_speedups_whatever_their_wording():
    ok = _doc(("cmp:a:b:x", "1.28× faster", ""), ("cmp:a:b:x", "1.283", "speedup"),
              ("cmp:a:b:x", "1.28× faster", ""))
    assert ledger.contradictions(ok) == []
    slower = _doc(("cmp:a:b:x", "1.05× slower", ""), ("cmp:a:b:x", "0.952", "speedup"))
    assert ledger.contradictions(slower) == []
    backwards = _doc(("cmp:a:b:x", "1.05× slower", ""), ("cmp:a:b:x", "1.05× faster", ""))
    assert len(ledger.contradictions(backwards)) == 1
    level = _doc(("cmp:a:b:x", "1.00×", ""), ("cmp:a:b:x", "1.003", "speedup"))
    assert ledger.contradictions(level) == []
    other = _doc(("cmp:a:b:x", "14.8× faster", ""), ("cmp:a:b:x", "15.0× faster", ""))
    assert len(ledger.contradictions(other)) == 1


def test_verdict_words_must_match_exactly():
    assert len(ledger.contradictions(_doc(("tone:a:b:x", "within noise", ""), ("tone:a:b:x", "under 1 %", "")))) == 1
    assert ledger.contradictions(_doc(("tone:a:b:x", "within noise", ""), ("tone:a:b:x", "within noise", ""))) == []


def test_plain_leaves_the_printed_text():
    doc = "took " + _doc(("fig:v1:b", "13.72", "ms")) + " ms"
    assert ledger.plain(doc) == "took 13.72 ms"


def test_the_direction_word_follows_the_ratio():
    assert ratio_words(1.28) == "1.28× faster"
    assert ratio_words(1 / 1.05) == "1.05× slower"
    assert ratio_words(1.004) == ratio_words(1 / 1.004) == "1.00×"


# --------------------------------------------------------------------------- the committed reports




@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_committed_reports_say_each_thing_one_way(built_reports, name):
    page = built_reports[name]
    assert ledger.contradictions(page) == []
    keys = {m.key for m in ledger.marks(page)}
    s = summarize(get_assignment(ROOT / "kernels", name), ROOT / "logs", "h100")
    for v in s.measured:  # every figure, and every comparison with the previous version, is checked
        assert f"fig:{v.name}:{s.benchmark_case}" in keys
        prev = s.previous(v)
        if prev is not None:
            assert f"cmp:{v.name}:{prev.name}:{s.benchmark_case}" in keys


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_steps_table_labels_agree_with_their_numbers(built_reports, name):
    """The colour follows the verdict, the direction word the ratio, and the ratio is the times printed
    beside it (the figures, or the one session's pair the cell names)."""
    soup = BeautifulSoup(built_reports[name], "html.parser")
    s = summarize(get_assignment(ROOT / "kernels", name), ROOT / "logs", "h100")
    rows = soup.select("table.steps-table tbody tr")
    checked = 0
    for tr in rows:
        version = tr.find("td").get_text(strip=True)
        v = s.get(version)
        prev = s.previous(v)
        cell = tr.select_one("td.verdict")
        if prev is None or v.figure is None:
            continue
        c = compare_versions(v, prev)
        label = cell.find("span")
        text = label.get_text(" ", strip=True)
        assert text.startswith(c.ratio), (version, text)
        assert ("faster" in text) == (c.theirs_ms > c.mine_ms and c.ratio != "1.00×")
        assert label["class"] == [{"faster": "ok", "slower": "bad"}.get(c.tone, "muted")]
        if c.tone == "faster":
            assert "faster" in text
        if c.tone == "slower":
            assert "slower" in text
        if not c.on_figures:  # the times the ratio divides are printed beside it, with where they come from
            assert c.where in cell.get_text(" ", strip=True)
        checked += 1
    assert checked == len([v for v in s.measured if s.previous(v) is not None])


def test_a_contradiction_fails_the_build_and_names_both_values(tmp_path, monkeypatch):
    """Appendix A made to print one version's figure 10 % off: the build stops before writing anything,
    naming the figure and both values; --warn-contradictions builds it with a warning."""
    from reporter.render import appendix

    real = appendix.ms
    monkeypatch.setattr(appendix, "ms", lambda x: real(x * 1.1) if x is not None else real(x))
    out = tmp_path / "histogram"
    result = CliRunner().invoke(app, ["build", "histogram", "--html-only", "--out", str(out)])
    assert result.exit_code != 0
    assert "would contradict itself" in result.output and "fig:v01_global_atomics:benchmark" in result.output
    assert re.search(r"'6\.738 ms' and as '7\.412 ms'", result.output), result.output
    assert not (out / "worklog.html").exists()
    result = CliRunner().invoke(app, ["build", "histogram", "--html-only", "--out", str(out),
                                      "--warn-contradictions"])
    assert result.exit_code == 0, result.output
    assert "contradiction: fig:v01_global_atomics:benchmark" in result.output
    assert (out / "worklog.html").is_file()


def test_the_teams_bound_numbers_are_checked_too(built_reports):
    """Figures and ratios the worklog binds ({{ v02.ms }}, {{ v02.speedup_over('v01') }}) are marked like
    the page's own and agree with them: flashattn's text quotes v02 against v01, as its steps table does."""
    page = built_reports["flashattn"]
    bound = re.findall(r'<span data-k="(cmp:v02_fused_triton:v01_naive:benchmark)" data-u="speedup">', page)
    printed = [m for m in ledger.marks(page) if m.key == "cmp:v02_fused_triton:v01_naive:benchmark"]
    assert bound and len(printed) > len(bound)
    assert ledger.contradictions(page) == []


def test_a_side_with_one_sample_is_not_tested_and_says_so():
    """One call has no spread to test against: the label says 'not tested', never 'within noise'."""
    from conftest import LOGS

    from reporter import store
    from reporter.analysis.compare import compare_pair
    from reporter.standing import Pairing

    base = next(r for r in store.runs(LOGS, "histogram", "v07_lean_launch") if r.timing is not None and r.timing.n > 2)
    one = base.timing.model_copy(update={"samples_ms": [base.timing.mean_ms * 3], "n": 1,
                                         "mean_ms": base.timing.mean_ms * 3})
    c = compare_pair(Pairing(base, base.model_copy(update={"timing": one}), figures=True), "v07", "v06", "benchmark")
    assert c.tone == "untested" and c.label.startswith("3.00× faster, not tested: 1 sample")
