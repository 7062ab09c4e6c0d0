"""worklog.md: front matter, sections, and numbers bound to the records."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT
from reporter.analysis.facts import binding_context, fmt_number
from reporter.analysis.summary import summarize
from reporter.assignments import get_assignment
from reporter.render import ledger
from reporter.render.worklog import WorklogError, bind, parse

A = get_assignment(ROOT / "kernels", "flashattn")


@pytest.fixture(scope="module")
def ctx():
    return binding_context(summarize(A, ROOT / "logs", "h100"))


def test_bound_numbers_come_from_the_records(ctx):
    s = summarize(A, ROOT / "logs", "h100")
    v02 = s.get("v02")
    marked = bind("{{ v02.median_ms }} ms; {{ v02.ms }} ms; {{ v02.speedup_over('v01') }}x", ctx, Path("w.md"))
    # the figure and the ratio are marked with what they stand for, for the report's consistency check
    assert [(m.key, m.text) for m in ledger.marks(marked)] == [
        ("fig:v02_fused_triton:benchmark", f"{fmt_number(ctx['v02'].ms)} ms"),
        ("cmp:v02_fused_triton:v01_naive:benchmark", f"{fmt_number(ctx['v02'].speedup_over('v01'), 3)}×")]
    text = ledger.plain(marked)
    assert text == (f"{fmt_number(v02.median_ms)} ms; {fmt_number(v02.figure_ms)} ms; "
                    f"{fmt_number(s.get('v01').figure_ms / v02.figure_ms, 3)}x")


def test_peer_and_reference_bindings(ctx):
    text = bind("{{ peers.sdpa_cudnn.median_ms }} / {{ reference.median_ms }}", ctx, Path("w.md"))
    assert text.endswith("/ 13.62")


@pytest.mark.parametrize("expr,why", [
    ("{{ v99.median_ms }}", "'v99' is not a version"),
    ("{{ v02.medain_ms }}", "has no 'medain_ms'"),
    ("{{ v02.speedup_over('v77') }}", "no version or peer named 'v77'"),
    ("{{ peers.sdpa_nothing.median_ms }}", "no peer named 'sdpa_nothing'"),
])
def test_unresolved_reference_names_line_and_reason(ctx, expr, why):
    text = "first line\nsecond {{ v02.median_ms }}\nthird " + expr + "\n"
    with pytest.raises(WorklogError) as e:
        bind(text, ctx, Path("kernels/x/worklog.md"), first_line=10)
    assert "kernels/x/worklog.md:12:" in str(e.value) and why in str(e.value)


def test_syntax_error_is_located(ctx):
    with pytest.raises(WorklogError, match=r"w.md:3: template syntax"):
        bind("a\nb\n{{ v02.median_ms \n", ctx, Path("w.md"))


def test_sections_are_split_by_role(ctx, tmp_path):
    p = tmp_path / "worklog.md"
    p.write_text("---\ntitle: T\nauthors: [Ann, Bo]\ngpu: h100\n---\n\n## Intro\nhello\n\n## v02_fused\n### What we concluded\n"
                 "{{ v02.median_ms }}\n\n## Why we stopped\nroof\n\n## How LLMs helped\nsome\n")
    wl = parse(p, ctx)
    assert wl.title == "T" and wl.authors == ["Ann", "Bo"]
    assert list(wl.versions) == ["v02"] and "What we concluded" in wl.versions["v02"].markdown
    assert wl.stopped and "roof" in wl.stopped.markdown and wl.llms and [s.title for s in wl.front] == ["Intro"]


def test_bad_front_matter(tmp_path, ctx):
    p = tmp_path / "worklog.md"
    p.write_text("---\ntitle: [unclosed\n---\n")
    with pytest.raises(WorklogError, match="front matter is not valid YAML"):
        parse(p, ctx)


def test_duplicate_version_section(tmp_path, ctx):
    p = tmp_path / "worklog.md"
    p.write_text("## v02_a\nx\n## v02_b\ny\n")
    with pytest.raises(WorklogError, match=r"worklog.md:3: a second section for v02"):
        parse(p, ctx)


def test_committed_worklog_binds(ctx):
    wl = parse(A.worklog_path, ctx)
    assert {"v01", "v02", "v03"} <= set(wl.versions) and wl.stopped and wl.llms


def test_sweep_bindings_name_a_configuration_and_a_sweep(ctx):
    """v14's two sequential sweeps timed the same configurations in opposite orders; the newest
    is interleaved."""
    text = bind("{{ v14.sweep_order('STAGES=3 CLUSTER=2', '20261122T0515') }} "
                "{{ v14.sweep_order('STAGES=3 CLUSTER=2', '20261122T0510') }} "
                "{{ v14.sweep_choice() == v14.sweep_best }}", ctx, Path("w.md"))
    assert text == "1 2 True"
    ms = bind("{{ v14.sweep_ms('STAGES=3 CLUSTER=2 RELEASE_CLUSTER=1') }}", ctx, Path("w.md"))
    assert float(ms) > 20  # the first build's cluster-scope releases

    with pytest.raises(WorklogError, match="no such configuration"):
        bind("{{ v14.sweep_ms('STAGES=9') }}", ctx, Path("w.md"))
    with pytest.raises(WorklogError, match="matches 0 sweeps"):
        bind("{{ v14.sweep_choice('1999') }}", ctx, Path("w.md"))


def test_a_heading_in_fenced_code_is_code_for_the_report_and_for_report_new(ctx, tmp_path):
    """One reader of worklog.md's structure: the report and `report new`/`diff` agree that a
    `## v02…` line inside a fenced block is part of v01's section, not a section of its own."""
    from reporter.worklog_sections import version_section

    text = ("## v01_naive\n\nThe log we kept:\n\n```text\n## v02_fused_triton notes pasted from a terminal\n```\n\n"
            "## Why we stopped\n\nDone.\n")
    p = tmp_path / "worklog.md"
    p.write_text(text)
    wl = parse(p, ctx)
    assert list(wl.versions) == ["v01"] and wl.stopped is not None
    assert "## v02_fused_triton notes" in wl.versions["v01"].markdown
    assert wl.versions["v01"].line == 1 and wl.stopped.line == 9
    assert version_section(text, "v02") is None
    assert "## v02_fused_triton notes" in version_section(text, "v01")


def test_probe_bindings_read_the_newest_run_with_probes():
    from reporter import store
    from reporter.analysis.facts import fmt_number

    h = get_assignment(ROOT / "kernels", "histogram")
    hctx = binding_context(summarize(h, ROOT / "logs", "h100"))
    runs = [store.load(p) for p in (ROOT / "logs" / "histogram" / "v07_lean_launch").glob("*.json.gz")]
    newest = max((r for r in runs if r.probes and r.case_name == "benchmark"), key=lambda r: r.created_utc)
    w8 = next(p for p in newest.probes if p.name == "probe_read_w8")
    text = ledger.plain(bind("{{ v07.probe('probe_read_w8').us }} / {{ v07.probe_run().us }}", hctx, Path("w.md")))
    assert text == f"{fmt_number(w8.timing.mean_ms * 1e3)} / {fmt_number(newest.timing.mean_ms * 1e3)}"
    for expr, why in (("{{ v07.probe('probe_nothing').us }}", "not among probe_read_w4"),
                      ("{{ v01.probe('probe_read_w8').us }}", "no run with probes"),
                      ("{{ v07.probe('probe_read_w8').gbps }}", "no derived figures")):
        with pytest.raises(WorklogError) as e:
            bind(expr, hctx, Path("w.md"))
        assert why in str(e.value), (expr, str(e.value))


def test_a_pinned_version_reads_the_probes_of_its_own_run():
    """``v08.at(run_id).probe(...)`` is the probe of that run, not of the newest run with probes;
    a pinned run without probes, or a case other than the pinned run's, is a clear error."""
    from reporter import store
    from reporter.analysis.facts import fmt_number

    t = get_assignment(ROOT / "kernels", "transform")
    tctx = binding_context(summarize(t, ROOT / "logs", "h100"))
    runs = sorted((store.load(p) for p in (ROOT / "logs" / "transform" / "v08_launch_plan").glob("*.json.gz")),
                  key=lambda r: r.created_utc)
    with_probes = [r for r in runs if r.probes and r.case_name == "benchmark"]
    assert len(with_probes) >= 2, "the committed logs hold two fp32 runs of v08 with probes"
    older = with_probes[0]
    bulk = next(p for p in older.probes if p.name == "copy_bulk")
    text = bind(f"{{{{ v08.at('{older.run_id}').probe('copy_bulk').us }}}}", tctx, Path("w.md"))
    assert text == fmt_number(bulk.timing.mean_ms * 1e3)
    assert text != bind("{{ v08.probe('copy_bulk').us }}", tctx, Path("w.md"))  # the newest run's differs
    plain = next(r for r in runs if not r.probes and r.case_name == "benchmark")
    for expr, why in ((f"{{{{ v08.at('{plain.run_id}').probe('copy_bulk').us }}}}", "has no probes"),
                      (f"{{{{ v08.at('{older.run_id}').probe('copy_bulk', 'benchmark_bf16').us }}}}",
                       "is on case 'benchmark'")):
        with pytest.raises(WorklogError) as e:
            bind(expr, tctx, Path("w.md"))
        assert why in str(e.value), (expr, str(e.value))


def test_a_binding_error_after_a_set_names_its_own_line(ctx):
    """A failing expression is reported at its own line, even when earlier lines use a name from
    {% set %} (which fails when a line is tried alone)."""
    text = ("{% set m = v02.ms %}\nfirst {{ m }}\n\nsecond {{ m }}\n\nthird {{ v02.no_such_figure }}\n")
    with pytest.raises(WorklogError) as e:
        bind(text, ctx, Path("w.md"), first_line=10)
    assert str(e.value).startswith("w.md:15: {{ v02.no_such_figure }}"), str(e.value)


def test_an_unclosed_block_is_reported_where_it_opens(ctx):
    text = "line one\n\n{% if v02.ms > 0 %}\nfaster\n\n{% for x in [1, 2] %}{{ x }}{% endfor %}\n" + "text\n" * 40
    with pytest.raises(WorklogError) as e:
        bind(text, ctx, Path("w.md"), first_line=20)
    assert str(e.value).startswith("w.md:22: template syntax: '{% if %}' is never closed"), str(e.value)


@pytest.mark.parametrize("expr,line_text", [
    ("{{ [1, 2][5] }}", "[1, 2][5]"),                       # IndexError inside jinja is Undefined
    ("{% for p in v02 %}{{ p }}{% endfor %}", "for p in v02"),  # not iterable
    ("{{ '%d' | format('x') }}", "format('x')"),           # TypeError from the format filter
    ("{{ v02.__class__ }}", "v02.__class__"),               # the sandbox refuses the attribute
    ("{{ v02.ms | round(1, 'sideways') }}", "sideways"),    # FilterArgumentError
    ("{{ (10 ** 400) | float | int }}", "10 ** 400"),       # overflow
])
def test_any_error_in_the_binding_is_ours_with_its_line(ctx, expr, line_text):
    """Whatever the people's text makes the binding raise comes back as WorklogError naming
    w.md and the line, never as a traceback of jinja's or Python's own."""
    text = "first\n\nsecond line\n" + expr + "\n"
    with pytest.raises(WorklogError) as e:
        bind(text, ctx, Path("w.md"))
    assert str(e.value).startswith("w.md:4") and line_text in str(e.value), (expr, str(e.value))


def test_a_run_binds_the_median_of_its_sm_clock_readings(ctx):
    """`sm_clock_median_mhz` is the median of the SM clocks NVML read during the run's samples, between
    the minimum and the maximum the worklogs already bind (v24's benchmark run, whose clock rose)."""
    import statistics

    from reporter import store

    run_id = "20261127T104002765Z"
    record = next(r for r in store.runs(ROOT / "logs", "flashattn") if r.run_id.startswith(run_id))
    clocks = record.timing.gpu_state.sm_clock_mhz
    bound = ctx["v24"].run(run_id)
    assert float(bound.sm_clock_median_mhz) == statistics.median(clocks)
    assert float(bound.sm_clock_min_mhz) <= float(bound.sm_clock_median_mhz) <= float(bound.sm_clock_max_mhz)
    # a run whose clock moved, and whose median is neither of its extremes: the binding is not min or max renamed
    assert min(clocks) < statistics.median(clocks) < max(clocks)


def test_a_sweep_point_binds_its_mean():
    """A swept configuration's time is the mean of its samples, the statistic the sweep ranks by and its
    table prints (matmul v29's sweep, whose 8-deep point's mean and median differ in the third digit)."""
    import gzip
    import json

    mm = binding_context(summarize(get_assignment(ROOT / "kernels", "matmul"), ROOT / "logs", "h100"))
    path = ROOT / "logs" / "matmul" / "v29_strassen_combine" / "sweeps" / "20261127T124124833Z_h100_benchmark.json.gz"
    point = next(p for p in json.loads(gzip.decompress(path.read_bytes()))["points"] if p["config"]["S"] == 8)
    bound = mm["v29"].sweep_ms("BM=128 BN=128 WM=64 WN=32 S=8")
    assert float(bound) == point["timing"]["mean_ms"] != point["timing"]["median_ms"]


def test_a_run_binds_its_checks_largest_error():
    """`max_abs_error` is the run's own check (matmul v28's first benchmark run against v17's in the same
    session: the two errors differ, so the binding reads the run it is given); a peer binds its own check,
    and a run or peer without one is refused by name."""
    from reporter import store
    from reporter.analysis.facts import BindingError, PeerFacts

    mm = binding_context(summarize(get_assignment(ROOT / "kernels", "matmul"), ROOT / "logs", "h100"))
    runs = {r.run_id: r for r in store.runs(ROOT / "logs", "matmul")}
    v28, v17 = "20261127T122450209Z_h100_benchmark", "20261127T122454922Z_h100_benchmark"
    assert mm["v28"].at(v28).max_abs_error == runs[v28].check.max_abs_error
    assert mm["v17"].at(v17).max_abs_error == runs[v17].check.max_abs_error
    assert runs[v28].check.max_abs_error != runs[v17].check.max_abs_error
    cublas = next(p for p in runs[v28].peers if p.name == "cublas")  # a peer's result is checked in the run too
    assert PeerFacts(cublas).max_abs_error == cublas.check.max_abs_error
    with pytest.raises(BindingError, match="no check"):
        PeerFacts(cublas.model_copy(update={"check": None})).max_abs_error


def test_a_table_cell_may_break_after_an_underscore_but_code_stays_whole():
    """In a narrow column (appendix G's two columns) a cell wraps ``test_small`` after its underscore rather than
    mid-word: the worklog's markdown puts a ``<wbr>`` after each underscore of a cell's text, not in code spans,
    and not outside tables."""
    from reporter.render.worklog import markdown_to_html

    html = markdown_to_html("a_b\n\n| case | `do_bench` |\n|---|---|\n| test_small | x_y_z |\n")
    assert "<p>a_b</p>" in html
    assert "<td>test_<wbr>small</td>" in html and "<td>x_<wbr>y_<wbr>z</td>" in html
    assert "<th><code>do_bench</code></th>" in html
