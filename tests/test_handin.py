"""The hand-in as a grader reads it: page 1 answers how fast, against what and why we stopped; one
figure per version everywhere; contents with page numbers and nested bookmarks; the key change
shown as the lines that changed; charts whose labels never collide; the worklog's gaps reported,
never printed as answers."""

from __future__ import annotations

import itertools
import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import LOGS, ROOT
from typer.testing import CliRunner

from reporter.analysis.compare import compare_versions
from reporter.analysis.summary import summarize
from reporter.assignments import get_assignment
from reporter.cli import app
from reporter.render.html import ms

runner = CliRunner()
ASSIGNMENTS = ("flashattn", "histogram")


@pytest.fixture(scope="module", params=ASSIGNMENTS)
def report(request, reports):
    """The report as conftest's session builds it once, HTML and PDF (tests/test_build.py reads flashattn's too)."""
    from pypdf import PdfReader

    name = request.param
    built = reports.pdf(name)
    reader = PdfReader(str(built.out / "worklog.pdf"))
    pages = [" ".join(text.split()) for text in built.page_texts()]
    return name, built.out, reader, pages, built.output


def _squeeze(text: str) -> str:
    """Text as read: one space between words, none before a comma, colon or closing parenthesis (the
    spaces get_text puts around marked figures)."""
    return re.sub(r"\s+([,:)])", r"\1", re.sub(r"\(\s+", "(", " ".join(text.split())))


def _summary(name: str):
    return summarize(get_assignment(ROOT / "kernels", name), LOGS, "h100")


def test_page_one_answers_how_fast_against_what_and_why_we_stopped(report):
    name, _, _, pages, _ = report
    s = _summary(name)
    best, first = s.best, next(v for v in s.versions if v.figure is not None)
    one = pages[0]
    assert best is not None and f"{best.name}: {ms(best.figure_ms)}" in one
    c = compare_versions(best, first)
    assert f"Against the first version, {first.name}: {c.ratio}" in one
    assert f"({ms(c.theirs_ms)} → {ms(c.mine_ms)}" in one  # the times the ratio divides, beside it
    if not c.on_figures:  # the figures come from different sessions: the session that timed both is named
        assert c.where in one
    own = [p for p in best.bench.peers if p.timing is not None and best.bench.timing.timed_like(p.timing)]
    for p in own:  # every peer of the best version's own run, with its time from that run (several: one sentence)
        said = (f"Against {p.name} (",) if len(own) == 1 else ("Against the peers timed in the same run the same way:",
                                                             f"{p.name}, ")
        assert all(x in one for x in said) and ms(p.timing.mean_ms) in one, p.name
    for ref in s.references:  # ranked by the course harness's mean, the leaderboard's own measure
        assert ref.label in one and "Under the course's own harness, as the leaderboard measures" in one
        assert re.search(r"so it would place #\d", one)
    from reporter.render.cover import course_mean
    from reporter.render.worklog import read_meta

    # the leaderboard's lines are about the hand-in the worklog names (the best version without one)
    named = read_meta(get_assignment(ROOT / "kernels", name).worklog_path).get("handin")
    ranked = next(v for v in s.versions if v.name == named) if named else best
    found = course_mean(s, ranked.name)
    if found is not None:  # the sentence relating that mean to its figure says whether one session took both
        one_session = any(ranked.figure.run.run_id in e.runs.values() for e in found[1].entries if e.name == ranked.name)
        flat = " ".join(one.split())
        assert ("in one session, the cross-check that also took our figure" in flat) == one_session
        assert ("two timers in different sessions" in flat) == (not one_session)
    assert "Why we stopped:" in one and "of the measured ceiling" in one


def test_every_figure_of_a_version_is_its_standing_figure(report):
    """The steps table, the step's result line and appendix A give a version one time: its figure."""
    name, out, _, _, _ = report
    from bs4 import BeautifulSoup

    soup = BeautifulSoup((out / "worklog.html").read_text(), "html.parser")
    s = _summary(name)
    rows = {tr.find("td").get_text(strip=True): tr.find_all("td")[1].get_text(strip=True)
            for tr in soup.select("table.steps-table tbody tr")}
    for v in s.versions:
        want = ms(v.figure_ms) if v.figure_ms else "–"
        assert rows[v.name] == want, v.name
        if v.figure_ms:
            result = _squeeze(soup.find("section", id=v.name).find("p", class_="result").get_text(" ", strip=True))
            assert result.startswith(f"{want}:"), v.name
    bench_rows = [tr.find_all("td") for tr in soup.select("table.measure tbody tr.bench")]
    assert {r[0].get_text(strip=True): r[2].get_text(strip=True) for r in bench_rows} == {  # a failed check: no time
        v.name: ms(v.figure_ms) if v.figure_ms else "–" for v in s.versions if v.bench is not None}


def test_each_version_is_compared_with_its_own_runs_peers_only(report):
    name, out, _, _, _ = report
    from bs4 import BeautifulSoup

    soup = BeautifulSoup((out / "worklog.html").read_text(), "html.parser")
    s = _summary(name)
    for v in s.versions:
        if not v.figure_ms:
            continue
        # the section gives the previous version; appendix B every comparison, the peers of its own run
        text = _squeeze(soup.find("div", id=f"how-{v.name}").get_text(" ", strip=True))
        own = {p.name: p for p in v.bench.peers if p.timing is not None and v.bench.timing.timed_like(p.timing)}
        line = text[text.index("Against the peers timed in the same run"):] if own else ""
        for p in own.values():
            assert f"{p.name} {ms(p.timing.mean_ms)} against {ms(v.figure_ms)}" in line, (v.name, p.name)
        named = set(re.findall(r"[:;] (\S+) [\d.,]+ (?:ms|µs) against", line))
        assert named <= set(own), (v.name, named - set(own))


def test_against_the_previous_is_measured_in_one_session(report):
    """The steps table's change and its verdict come from one session that timed both versions:
    the figures' own where they share one, else the session named, whose times the step gives."""
    name, out, _, _, _ = report
    from bs4 import BeautifulSoup

    from reporter.render.html import _host_words

    soup = BeautifulSoup((out / "worklog.html").read_text(), "html.parser")
    s = _summary(name)
    rows = {tr.find("td").get_text(strip=True): _squeeze(tr.find_all("td")[2].get_text(" ", strip=True))
            for tr in soup.select("table.steps-table tbody tr")}
    named_sessions = 0
    for v in s.versions:
        prev = s.previous(v)
        if prev is None or not v.figure_ms:
            continue
        c = compare_versions(v, prev)
        pair = c.pair
        assert pair.same_session, (v.name, "the committed logs time every pair in some session")
        cell = rows[v.name]
        host = _host_words([(prev.short, pair.theirs), (v.short, pair.mine)])  # the note on host-bound sides
        if host:
            assert cell.endswith(f" ({host})"), (v.name, cell)
            cell = cell[:-len(host) - 3]
        assert cell.startswith(c.label), (v.name, cell)
        result = _squeeze(soup.find("section", id=v.name).find("p", class_="result").get_text(" ", strip=True))
        if pair.figures:
            assert "session" not in cell, (v.name, cell)
        else:  # the pair's two times and its session, beside the ratio they give
            named_sessions += 1
            assert cell.endswith(f"{ms(pair.theirs_ms)} → {ms(pair.mine_ms)}, {c.where}"), (v.name, cell)
            assert f"{ms(pair.theirs_ms)} → {ms(pair.mine_ms)}, {c.where}" in result, (v.name, result)
    assert named_sessions >= 3, "both reports have versions whose figures come from different sessions"


def test_contents_have_page_numbers_and_bookmarks_nest_part_step_question(report):
    name, _, reader, pages, _ = report
    s = _summary(name)
    contents_at = next(i for i, p in enumerate(pages[:3]) if "Contents" in p)
    contents = pages[contents_at]
    labels = reader.page_labels  # the book's numbering: front matter i, ii …; body 1, 2 …; appendix A-1 …
    for v in s.versions:  # the number printed in the contents is the page that holds the step
        m = re.search(rf"{v.name}\s*\.*\s*([0-9]+)\b", contents)
        assert m, v.name
        assert v.name in pages[labels.index(m.group(1))], (v.name, m.group(1))
    m = re.search(r"A\. Every measurement\s*\.*\s*(A-\d+)", contents)
    assert m and "A. Every measurement" in pages[labels.index(m.group(1))]
    # the steps table is in the contents' own document, the cover in another before it: its heading on the page the
    # contents names, its table there or on the next page (a long contents leaves the heading and the note on the
    # columns at the foot of its own page)
    m = re.search(r"The steps at a glance\s*\.*\s*([ivxlc]+)\b", contents)
    assert m, "no roman page for the steps at a glance in the contents"
    at = labels.index(m.group(1))
    # the heading itself (on the contents' own page, beside the contents' line for it)
    assert pages[at].count("The steps at a glance") >= (2 if at == contents_at else 1), m
    assert "against the previous" in pages[at] + pages[at + 1], m
    # the contents links into the body and the appendix, which are other documents until bound
    dests = {str(a.get_object().get("/Dest")) for a in reader.pages[contents_at].get("/Annots", [])}
    assert {v.name for v in s.versions} | {"app-measurements"} <= dests
    for label, text in list(zip(labels, pages, strict=True))[1:]:  # every page after the cover is numbered
        if label.startswith("A-"):
            assert re.search(rf"page {label} / A-\d+", text), label
        elif label.isdigit():
            assert re.search(rf"page {label} / \d+", text), label
        else:
            assert re.fullmatch(r"[ivxlc]+", label) and re.search(rf"(^|\s){label}(\s|$)", text), label
    outline = reader.outline

    def titles(items):
        return [i.title for i in items if not isinstance(i, list)]

    top = titles(outline)
    assert "Part 1 — the versions" in top and "Appendix" in top
    part1 = outline[outline.index(next(i for i in outline if not isinstance(i, list)
                                        and i.title == "Part 1 — the versions")) + 1]
    assert isinstance(part1, list)
    from reporter.render.worklog import read_meta

    phases = read_meta(get_assignment(ROOT / "kernels", name).worklog_path).get("phases")
    if phases:  # part › phase › step › question
        assert [t.split(" v")[0] for t in titles(part1)] == list(phases.values())
        groups = [x for x in part1 if isinstance(x, list)]
        assert [t for g in groups for t in titles(g)] == [v.name for v in s.versions]
        step_list = groups[0]
    else:  # part › step › question
        assert titles(part1) == [v.name for v in s.versions]
        step_list = part1
    first_step_children = step_list[1]
    assert isinstance(first_step_children, list) and "What we concluded" in titles(first_step_children)


def test_the_key_change_is_the_lines_that_changed():
    """flashattn v04's step is exp2 in place of exp: its excerpt is the diff that shows it, against
    v02 (whose kernel v04 rewrites; v03 only imports it)."""
    from reporter.render.code import key_change

    a = get_assignment(ROOT / "kernels", "flashattn")
    vs = a.versions()
    v04 = next(v for v in vs if v.short == "v04")
    c = key_change(v04, [v for v in vs if v.number < 4], ROOT)
    assert c.excerpt is None and c.against.endswith("v02_fused_triton.py")
    added = "\n".join(t for k, t in c.lines if k == "add")
    removed = "\n".join(t for k, t in c.lines if k == "del")
    assert "exp2" in added and "tl.exp(" in removed
    assert '"""' not in added + removed, "the description at the top is the structure, not the change"
    assert c.shown <= 20 and 'class="add"' in c.html()
    v06 = next(v for v in vs if v.short == "v06")  # the first CUDA source: the code its name is about
    c6 = key_change(v06, [v for v in vs if v.number < 6], ROOT)
    assert c6.excerpt is not None and c6.excerpt.path.endswith(".cu")
    assert c6.excerpt.code.count("wgmma_") >= 4 and "#define" not in c6.excerpt.code


def test_a_version_that_prunes_its_predecessor_shows_what_it_keeps():
    """transform v17 is v16 with one of its paths kept (the swept ring): the diff is removals and a few
    edits, so the step shows the code it keeps."""
    from reporter.render.code import key_change

    a = get_assignment(ROOT / "kernels", "transform")
    vs = a.versions()
    v17 = next(v for v in vs if v.short == "v17")
    c = key_change(v17, [v for v in vs if v.number < 17], ROOT)
    assert c.excerpt is not None and c.against == "kernels/transform/v16_lean_call.py"
    assert c.removed > 4 * c.edited


def test_a_kernel_header_a_version_introduced_shows_its_marked_step():
    """v08's kernel lives in attn_sm90_overlap.cuh with the hooks of v10-v14: a diff against v07 would show
    their branches as v08's change, so the step shows the region the header marks, where S_j is issued
    with the previous P·V and the softmax runs while P·V is in flight."""
    from reporter.render.code import key_change

    a = get_assignment(ROOT / "kernels", "flashattn")
    vs = a.versions()
    v08 = next(v for v in vs if v.short == "v08")
    c = key_change(v08, [v for v in vs if v.number < 8], ROOT)
    assert c.excerpt is not None and c.path == "kernels/flashattn/attn_sm90_overlap.cuh"
    assert "wgmma_wait<1>" in c.excerpt.code and "issue_pv" in c.excerpt.code
    v09 = next(v for v in vs if v.short == "v09")  # a version that adds its idea is still shown as a diff
    assert key_change(v09, [v for v in vs if v.number < 9], ROOT).excerpt is None
    v07 = next(v for v in vs if v.short == "v07")  # unless its own source marks its key code: as it compiles
    c07 = key_change(v07, [v for v in vs if v.number < 7], ROOT)
    assert c07.excerpt is not None and c07.path == "kernels/flashattn/v07_pingpong.cu"
    assert "turn_sync_always(my_turn)" in c07.excerpt.code and "#if" not in c07.excerpt.code
    v10 = next(v for v in vs if v.short == "v10")  # a version that sets a hook: against the file that set the others
    c10 = key_change(v10, [v for v in vs if v.number < 10], ROOT)
    assert c10.against == "kernels/flashattn/v08_overlap.cu" and any("__all_sync" in t for _, t in c10.lines)


def test_a_header_new_in_a_version_shows_its_marked_region():
    """matmul v28's own .cu only declares its kernels; its idea, the pass that forms the ten operand sums, is
    in matmul_strassen_sums.cuh, new with it, which marks that region: the step shows the region, not a diff
    of the header against v27's .cu. v26, which brings no header, is still a diff."""
    from reporter.render.code import key_change

    a = get_assignment(ROOT / "kernels", "matmul")
    vs = a.versions()
    v28 = next(v for v in vs if v.short == "v28")
    c = key_change(v28, [v for v in vs if v.number < 28], ROOT)
    assert c.excerpt is not None and c.path == "kernels/matmul/matmul_strassen_sums.cuh"
    assert "strassen_sums_of" in c.excerpt.code and "product_tile" not in c.excerpt.code
    v26 = next(v for v in vs if v.short == "v26")
    assert key_change(v26, [v for v in vs if v.number < 26], ROOT).excerpt is None


def test_chart_labels_never_overlap():
    from reporter.analysis.hroofline import hierarchical_roofline
    from reporter.render import charts
    from reporter.render.profile_charts import hierarchical_roofline_figure

    for name in ASSIGNMENTS:
        s = _summary(name)
        for kind, fig in (("trajectory", charts.trajectory_figure(charts.trajectory_data(s))),
                          ("bandwidth", charts.bandwidth_figure(charts.bandwidth_data(s)))):
            assert charts.text_overlaps(fig) == [], (name, kind)
        runs = [r for v in s.versions if (r := v.profiled_run()) is not None]
        h = hierarchical_roofline(runs, s.ceilings)
        if h.versions and any(r.work.flops for r in runs):
            assert charts.text_overlaps(hierarchical_roofline_figure(h, runs[0].device.name)) == [], name


def test_overlap_check_catches_colliding_labels():
    import matplotlib.pyplot as plt

    from reporter.render import charts

    fig, ax = plt.subplots()
    ax.text(0.5, 0.5, "one label")
    ax.text(0.52, 0.5, "another label")
    assert charts.text_overlaps(fig) == [("one label", "another label")]
    plt.close(fig)


def test_overlap_check_catches_a_leader_through_a_label():
    import matplotlib.pyplot as plt

    from reporter.render import charts

    fig, ax = plt.subplots()
    ax.text(0.5, 0.5, "struck label", ha="center", va="center")
    ax.annotate("pointed-at", xy=(0.1, 0.5), xytext=(0.9, 0.5), arrowprops={"arrowstyle": "-"})
    assert ("leader of pointed-at", "struck label") in charts.text_overlaps(fig)
    plt.close(fig)


def test_spread_keeps_order_and_gap():
    from reporter.render.charts import spread

    out = spread([10, 11, 12, 50], gap=5, lo=0, hi=100)
    assert out[0] < out[1] < out[2] and all(b - a >= 5 - 1e-9 for a, b in itertools.pairwise(out))
    assert out[3] == 50
    assert spread([98, 99], gap=5, lo=0, hi=100) == [95, 100]


def test_histogram_has_no_flop_roofline_but_a_bandwidth_chart(tmp_path):
    from bs4 import BeautifulSoup

    result = runner.invoke(app, ["build", "histogram", "--root", str(ROOT), "--out", str(tmp_path), "--no-pdf"])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "worklog.html").read_text()
    assert "Hierarchical roofline" not in html and "TFLOP/s" not in BeautifulSoup(html, "html.parser").get_text()
    assert "Bandwidth against the copy ceiling" in html


def test_worklog_gaps_are_reported_and_never_printed_as_answers(project):
    from bs4 import BeautifulSoup

    wl = project / "kernels" / "histogram" / "worklog.md"
    text = wl.read_text()
    text = text.replace("## v04_bank_spread", "## v42_ghost\n\n### What we concluded\nA ghost.\n\n## v04_bank_spread", 1)
    start = text.index("## v02_smem_privatized")
    end = text.index("## v03_word_loads")
    text = text[:start] + text[end:]  # v02 loses its section
    text = text.replace("### What to try next", "### What to try next\nEDIT ME: the next step.\n\n<!-- -->", 1)
    wl.write_text(text)
    result = runner.invoke(app, ["build", "histogram", "--root", str(project), "--no-pdf"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "section '## v42_ghost' names no version of histogram" in out
    assert "no section '## v02_smem_privatized'" in out
    assert "'What to try next' is not answered" in out
    soup = BeautifulSoup((project / "reports" / "histogram" / "worklog.html").read_text(), "html.parser")
    body = soup.get_text(" ")
    assert "EDIT ME" not in body and "A ghost." not in body
    assert "worklog.md has no section ## v02_smem_privatized" in " ".join(
        soup.find("section", id="v02_smem_privatized").get_text(" ").split())
    assert "Not answered in worklog.md." in body


def test_anonymous_leaves_the_authors_out(tmp_path):
    from reporter.render.worklog import read_meta

    authors = read_meta(ROOT / "kernels" / "histogram" / "worklog.md")["authors"]
    result = runner.invoke(app, ["build", "histogram", "--root", str(ROOT), "--out", str(tmp_path), "--no-pdf",
                                 "--anonymous"])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "worklog.html").read_text()
    assert all(a not in html for a in authors) and "Anonymous submission" in html


def test_reporter_build_does_not_need_torch(tmp_path):
    """`report build` on the committed logs in a process where torch, CuPy and Triton cannot be imported."""
    import subprocess
    import sys

    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('torch', 'cupy', 'triton'):\n"
            "            raise ImportError(f'{name} is blocked in this test')\n"
            "sys.meta_path.insert(0, Block())\n"
            "from reporter.cli import app\n"
            f"sys.argv = ['report', 'build', 'histogram', '--root', {str(ROOT)!r}, '--out', {str(tmp_path)!r}, "
            "'--no-pdf']\n"
            "app()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(ROOT), check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "worklog.html").is_file()


def _phases(project, text: str) -> None:
    wl = project / "kernels" / "histogram" / "worklog.md"
    body = wl.read_text()
    start = body.index("phases:")
    end = body.index("---", start)
    wl.write_text(body[:start] + text + body[end:])


@pytest.mark.parametrize("phases, message", [
    ("phases:\n  v09_nothing: 'Ghosts'\n", "front matter 'phases': no version 'v09_nothing' in this assignment"),
    ("phases:\n  v05: 'Later'\n  v02: 'Earlier'\n", "list the phases in the order of their versions"),
    ("phases: [v01, v05]\n", "front matter 'phases' must map the version that opens each phase to its title"),
])
def test_phases_that_do_not_fit_the_assignment_are_one_clear_error(project, phases, message):
    _phases(project, phases)
    result = runner.invoke(app, ["build", "histogram", "--root", str(project), "--no-pdf"])
    assert result.exit_code != 0
    assert message in " ".join(result.output.split()) and "worklog.md" in result.output


def test_phases_group_the_steps_and_follow_only(project):
    from bs4 import BeautifulSoup

    _phases(project, "phases:\n  v02: 'Shared memory'\n  v05_persistent: 'The launch'\n")
    out = project / "out"
    result = runner.invoke(app, ["build", "histogram", "--root", str(project), "--no-pdf", "--out", str(out),
                                 "--only", "v01,v03,v06,v07"])
    assert result.exit_code == 0, result.output
    soup = BeautifulSoup((out / "worklog.html").read_text(), "html.parser")
    heads = [" ".join(h.get_text(" ", strip=True).split()) for h in soup.select("h3.phase")]
    assert heads == ["Shared memory v03", "The launch v06–v07"]  # v01 before the first phase, v02 and v05 left out
    order = [el.get("id") or el.get_text(strip=True) for el in soup.select("h3.phase, section.step")]
    assert order == ["v01_global_atomics", "phase-1", "v03_word_loads", "phase-2", "v06_single_launch",
                     "v07_lean_launch"]
    toc = [li.get_text(" ", strip=True) for li in soup.select("nav.toc .toc-steps li")]
    assert toc[:3] == ["v01_global_atomics", "Shared memory (v03)", "v03_word_loads"]


def test_an_edit_lays_out_only_its_phase_again(project, monkeypatch, reports):
    """The body is one document per phase: an answer edited in the second phase lays out that phase
    (and binds the book) and takes every other part from the cache; the page numbers stay continuous."""
    from pypdf import PdfReader

    reports.pdf("histogram")  # the session's build of the committed report: its parts are in the session's cache
    cache = project / "cache"
    _copy_files(Path(os.environ["REPORT_CACHE_DIR"]), cache)  # so the first build below lays out none again
    monkeypatch.setenv("REPORT_CACHE_DIR", str(cache))
    out = project / "out"
    build = ["build", "histogram", "--root", str(project), "--out", str(out)]
    assert (r := runner.invoke(app, build)).exit_code == 0, r.output
    before = set(cache.glob("*.pdf"))
    wl = project / "kernels" / "histogram" / "worklog.md"
    text = wl.read_text()
    at = text.index("### What to try next", text.index("## v06_single_launch"))
    wl.write_text(text[:at] + "### What to try next\nA sentence added for the test.\n" + text[at + 21:])
    assert (r := runner.invoke(app, build)).exit_code == 0, r.output
    laid_out = set(cache.glob("*.pdf")) - before
    assert len(laid_out) == 2, sorted(p.name for p in laid_out)  # the phase's document and the bound book
    reader = PdfReader(str(out / "worklog.pdf"))
    part = next(PdfReader(str(p)) for p in laid_out if len(PdfReader(str(p)).pages) < len(reader.pages))
    part_text = " ".join(" ".join(p.extract_text().split()) for p in part.pages)
    assert "A sentence added for the test." in part_text and "v05_persistent" in part_text
    def flat(items):
        return [t for i in items for t in (flat(i) if isinstance(i, list) else [i.title])]

    steps = [t for t in flat(part.outline) if re.fullmatch(r"v\d+_\w+", t)]
    assert steps == ["v05_persistent", "v06_single_launch", "v07_lean_launch"], steps  # the second phase only
    pages = [" ".join(p.extract_text().split()) for p in reader.pages]  # each page's text once (pypdf: seconds)
    assert "A sentence added for the test." in " ".join(pages)
    body = [i for i, label in enumerate(reader.page_labels) if label.isdigit()]
    last = len(body)
    for n, i in enumerate(body, start=1):  # stamped across the phases' documents: 1 / N … N / N
        assert f"page {n} / {last}" in pages[i], (n, last)


def _copy_files(src: Path, dst: Path) -> None:
    """Every file under ``src`` that is there when it is copied (another worker may be writing the cache:
    its files appear whole, under a temporary name first, and old ones are pruned)."""
    for f in sorted(src.rglob("*")):
        if f.is_file() and ".tmp" not in f.name:
            (dst / f.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copy2(f, dst / f.relative_to(src))
            except FileNotFoundError:
                pass


def test_a_change_that_rounds_to_zero_has_no_minus_sign():
    from reporter.render.numbers import signed_pct

    assert signed_pct(-0.004) == "+0.0 %" and signed_pct(0.9) == "+0.9 %" and signed_pct(-1.74) == "-1.7 %"


def test_a_comparison_decided_by_the_host_says_so():
    """transform v15's standing fp32 run (12:24) follows the host's queuing time (correlation over
    0.8) and queuing takes over a fifth of its calls: v16's line against v15 names it. v16's samples
    follow the host too, but queuing is an eighth of its calls (not host-bound), and v17's do not
    follow it: v17's line against v16 names neither."""
    from reporter.analysis.diagnose import host_bound
    from reporter.render.html import _against

    s = _summary("transform")
    v = {x.short: x for x in s.versions}
    assert host_bound(v["v15"].bench) and not host_bound(v["v17"].bench)
    c = _against(v["v16"], v["v15"], "previous version")
    assert c is not None and c.host == "host-bound: v15"
    c17 = _against(v["v17"], v["v16"], "previous version")
    assert c17 is not None and c17.host == ""


def test_a_sweep_marks_the_configuration_the_version_ran_on_the_sweeps_case():
    """transform v16 runs one ring per dtype (config_for): its newest sweep, on benchmark_bf16, marks
    the bf16 ring (4 stages) as the one it runs, not the fp32 ring of its benchmark-case figure."""
    from reporter.render.appendix import sweep_view

    s = _summary("transform")
    v16 = next(v for v in s.versions if v.short == "v16")
    view = sweep_view(v16)
    assert view is not None and view["case"] == "benchmark_bf16"
    assert view["runs_config"] == "TILE_BYTES=8192, STAGES=4, BLOCKS_PER_SM=4"
    assert [r["config"] for r in view["rows"] if r["runs"]] == ["TILE_BYTES=8192, STAGES=4, BLOCKS_PER_SM=4"]


def test_a_structure_cut_after_a_clause_ends_as_a_sentence():
    """The step's "how the code is structured" is the docstring's opening, cut at a sentence or a clause
    (a ';' or a ':') after about STRUCTURE_CHARS characters: a cut after a clause ends with a full stop,
    not the semicolon or colon that led on to the rest."""
    from reporter.render.html import _structure

    doc = ("`v25.cu` sets the tiles and the depth and holds the two kernels; `ring.cuh`, new here, holds the loop; "
           + "the transposition, the copies and the step loop are v24's. " * 8)
    cut = _structure(doc, limit=80)
    assert cut == "`v25.cu` sets the tiles and the depth and holds the two kernels."
    whole = "A short docstring; with a clause."
    assert _structure(whole) == whole
    listed = "`v26.cu` holds two kernels: `transpose_a` and `product`, in that order. " + "More words follow. " * 8
    assert _structure(listed, limit=40) == "`v26.cu` holds two kernels."
    labelled = "First paragraph, long enough to take most of the budget.\n\nStructure: `v28.cu` builds it; More words."
    assert _structure(labelled, limit=90) == ("First paragraph, long enough to take most of the budget.\n\n"
                                              "Structure: `v28.cu` builds it.")
    assert _structure(labelled, limit=70) == "First paragraph, long enough to take most of the budget."  # no bare label


def test_page_one_shows_the_hand_in_on_every_case_against_its_peer(report):
    """The worklog names its hand-in (front matter 'handin'): page 1 prints its newest cross-check on every
    case, the course harness's mean and do_bench's median beside the peer's, and the ratios
    analysis.crosscheck.against_peer computes, the ones the worklog's bindings print."""
    from reporter.analysis.crosscheck import against_peer
    from reporter.render.cover import cover

    from reporter.render.worklog import _split_front_matter

    name, _, _, pages, _ = report
    path = ROOT / "kernels" / name / "worklog.md"
    handin = _split_front_matter(path.read_text(), path)[0].get("handin")
    if handin is None:
        pytest.skip(f"{name}'s worklog names no hand-in")
    s = _summary(name)
    c = cover(s, handin)
    check = s.crosschecks_of(handin)[-1]
    runs = {r.run_id: r for v in s.versions for r in v.all_runs}
    rows = against_peer(check, "sdpa_cudnn", runs)
    assert [r.case for r in c.handin_rows] == [r.case for r in rows] == ["test_small", "test_medium", "benchmark"]
    one = pages[0]
    assert f"Our hand-in, {handin}" in one and check.run_id in one
    # the hand-in is not the fastest figure: page 1 sets it against that one, by the one comparison
    assert (f"The hand-in, {handin}, against it:" in one) == (s.best.name != handin)
    for r in rows:
        assert r.course_ratio and r.do_bench_ratio and r.course_ratio > 1 and r.do_bench_ratio > 1
        assert f"{r.course_ratio:.3f}×" in one and f"{r.do_bench_ratio:.3f}×" in one, r.case
    # the same ratios from the record itself: the means of the course's 100-call runs (of all its runs where none
    # timed 100 calls: its stopping rule can end a run after a few) and do_bench's medians
    def course(name, case):
        timed = [c for e in check.entries if e.name == name for run in e.course if run.mode == "benchmark"
                 for c in run.cases if c.case_name == case]
        means = [c.mean_ms for c in timed if c.runs == 100] or [c.mean_ms for c in timed]
        return sum(means) / len(means)

    def bench(name, case):
        return next(d.median_ms for e in check.entries if e.name == name for d in e.do_bench if d.case_name == case)

    for case in ("test_small", "test_medium", "benchmark"):
        assert f"{course('sdpa_cudnn', case) / course(handin, case):.3f}×" in one, case
        assert f"{bench('sdpa_cudnn', case) / bench(handin, case):.3f}×" in one, case
    # the leaderboard's rank is claimed on the hand-in, by its course-harness mean
    assert f"{handin} took" in one and "would place #1" in one


@pytest.mark.parametrize("spec,says", [
    ("v99", "front matter 'handin': no version 'v99' in this assignment"),
    ("", "front matter 'handin' must name one version"),
    (["v29"], "front matter 'handin' must name one version")])
def test_a_hand_in_that_names_no_version_is_refused_with_the_field(spec, says):
    from reporter.render.html import handin_of
    from reporter.render.worklog import WorklogError

    with pytest.raises(WorklogError, match=re.escape(says)):
        handin_of({"handin": spec}, ["v28_stale_rows", "v29_rows_dispatch"], Path("worklog.md"))
    assert handin_of({"handin": "v29"}, ["v28_stale_rows", "v29_rows_dispatch"], Path("w.md")) == "v29_rows_dispatch"
    assert handin_of({}, ["v29_rows_dispatch"], Path("w.md")) is None
