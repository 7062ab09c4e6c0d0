"""Page 1 and Part 2 of the report, computed from the records: the best version's figure, its
speedup over the first version and over the peers timed in its own run, the public references
(labelled with the card they were measured on), where it stands against its roof, and what the
cross-checks (the course's harness, do_bench) measured beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

from ..analysis import keys
from ..analysis.compare import compare_peer, compare_versions
from ..analysis.diff import ratio_words
from ..analysis.facts import fmt_number
from ..analysis.listing import timed_peers
from ..analysis.summary import AssignmentSummary
from ..records import CrossCheck, Run
from ..standing import Figure, peer_ms
from . import ledger
from .against import Against
from .numbers import ms, pct, signed_pct


@dataclass
class HandinRow:
    """One case of the hand-in's cross-check against a peer, as page 1 prints it (every cell marked)."""

    case: str
    course: Markup
    peer_course: Markup
    course_ratio: Markup
    do_bench: Markup
    peer_do_bench: Markup
    do_bench_ratio: Markup


@dataclass
class Cover:
    best: str | None
    figure: Markup | str = ""
    how: str = ""
    rate: str = ""
    facts: list[Markup | str] = field(default_factory=list)  # 'against what', one sentence each
    roof: str = ""
    other_bests: list[str] = field(default_factory=list)  # the fastest on each other headline case (CASES_WHERE)
    handin: str | None = None  # the version handed in (the worklog's front matter 'handin')
    handin_intro: Markup | str = ""  # the sentence before its table, or why there is no table
    handin_rows: list[HandinRow] = field(default_factory=list)


def cover(s: AssignmentSummary, handin: str | None = None) -> Cover:
    """Page 1: the best figure, and each 'against what' from the one comparison (reporter.analysis.compare),
    with every figure and ratio marked for the consistency check; with ``handin`` (the version handed in),
    its newest cross-check against a peer on every case, and the leaderboard's rank taken on it."""
    best = s.best
    fig = best.figure if best is not None else None
    others, other_bests = other_headline_facts(s)
    if best is None or fig is None:
        return Cover(best=None, facts=[f"No version has a timed run on {s.case_words} yet.", *others],
                     other_bests=other_bests)
    r, d = fig.run, fig.derived(s.ceilings)
    rate = _rate(fig, s)
    facts: list[Markup | str] = []
    first = next((v for v in s.versions if v.figure is not None), None)
    c = compare_versions(best, first) if first is not None and first is not best else None
    if c is not None:
        row = Against("first version", c, report_case=s.benchmark_case)
        where = f", {escape(c.where)}" if c.where else ", both figures of one session"
        facts.append(Markup(f"Against the first version, {escape(c.theirs)}: {row.label} ({row.times}{where})."))
    hv = next((v for v in s.versions if v.name == handin), None) if handin and handin != best.name else None
    if hv is not None and hv.figure is not None:  # the hand-in is not the fastest figure: how far from it
        hc = compare_versions(hv, best)
        if hc is not None:
            row = Against("best version", hc, report_case=s.benchmark_case)
            where = f", {escape(hc.where)}" if hc.where else ", both figures of one session"
            facts.append(Markup(f"The hand-in, {escape(hv.name)}, against it: {row.label} ({row.times}{where})."))
    peers = timed_peers(r)
    against = []
    for p in sorted(peers, key=lambda p: peer_ms(p) or 0.0):
        pc = compare_peer(r, p)
        if pc is None:
            continue
        row = Against("peer, same run", pc)
        against.append((p, row))
    if len(against) == 1:
        p, row = against[0]
        facts.append(Markup(f"Against {escape(p.name)} ({escape(p.description)}), timed in the same run the same way: "
                            f"{row.label} ({row.times})."))
    elif against:  # one sentence for every peer of the run (what each is: appendix B)
        facts.append(Markup("Against the peers timed in the same run the same way: "
                            + "; ".join(f"{escape(p.name)}, {row.label} ({row.times})" for p, row in against) + "."))
    if not peers:
        facts.append("No peer was timed in the same run, so none is compared here.")
    facts += leaderboard_facts(s, handin)
    facts += others
    roof = ""
    if d.floor_ms and d.ceiling_value and fig.ms < d.floor_ms:  # faster than the model allows: the roof is not its bound
        roof = (f"It runs under the work model's floor of {ms(d.floor_ms)} (its work at the measured ceilings): "
                "those ceilings do not bound this kernel, so the model cannot say what remains to be won.")
    elif d.floor_ms and d.ceiling_value:
        roof = (f"It reaches {pct(d.fraction_of_ceiling)} of the measured ceiling ({d.ceiling}: "
                f"{fmt_number(d.ceiling_value, 4)} {d.ceiling_unit or ''}): the work model's floor is {ms(d.floor_ms)}, "
                f"so at most {ms(fig.ms - d.floor_ms)} ({pct(1 - d.floor_ms / fig.ms)} of its time) remain to be won.")
    intro, rows = handin_table(s, handin) if handin else ("", [])
    return Cover(best=best.name, figure=ledger.mark(keys.fig(best.name, best.benchmark_case), ms(fig.ms)), how=fig.how,
                 rate=rate, facts=facts, roof=roof, other_bests=other_bests, handin=handin, handin_intro=intro,
                 handin_rows=rows)


def handin_table(s: AssignmentSummary, handin: str) -> tuple[Markup | str, list[HandinRow]]:
    """The hand-in on every case of its cross-check (:func:`course_check`: the one the leaderboard's rank is
    taken from), beside the first peer submitted with it:
    the course harness's mean and do_bench's median of each, and the ratio of each timer
    (:func:`reporter.analysis.crosscheck.against_peer`, which the worklog bindings print too)."""
    from ..analysis.crosscheck import against_peer

    check = course_check(s, handin)
    if check is None:
        cmd = f"report crosscheck {s.assignment.name} {handin.split('_')[0]} --peer NAME"
        return Markup(f"Our hand-in is {escape(handin)}; no cross-check of it on this GPU yet (<code>{escape(cmd)}</code> "
                      "times it with the course's harness and do_bench beside a peer)."), []
    peer = next((e.name for e in check.entries if e.peer), None)
    if peer is None:
        return (f"Our hand-in is {handin}; its cross-check {check.run_id} submitted no peer beside it, "
                "so no case is compared here."), []
    runs = {r.run_id: r for v in s.versions for r in v.all_runs}
    rows = []

    def cell(value: float | None, key: str) -> Markup:
        return ledger.mark(key, ms(value)) if value is not None else Markup("—")

    def ratio(value: float | None, key: str) -> Markup:
        return ledger.mark(key, f"{fmt_number(value, 4)}×") if value is not None else Markup("—")

    for r in against_peer(check, peer, runs):
        c = check.run_id
        rows.append(HandinRow(
            case=r.case, course=cell(r.course_ms, keys.xc(c, handin, r.case, "course")),
            peer_course=cell(r.peer_course_ms, keys.xc(c, peer, r.case, "course")),
            course_ratio=ratio(r.course_ratio, keys.xc_ratio(c, handin, peer, r.case, "course")),
            do_bench=cell(r.do_bench_ms, keys.xc(c, handin, r.case, "do_bench")),
            peer_do_bench=cell(r.peer_do_bench_ms, keys.xc(c, peer, r.case, "do_bench")),
            do_bench_ratio=ratio(r.do_bench_ratio, keys.xc_ratio(c, handin, peer, r.case, "do_bench"))))
    rep = next((d.rep_ms for e in check.entries for d in e.do_bench), None)
    over = f", do_bench over {fmt_number(rep, 4)} ms of calls a case" if rep is not None else ""
    intro = Markup(f"Our hand-in, <a href=\"#{escape(handin)}\">{escape(handin)}</a> (one submission for every case), "
                   f"against {escape(peer)} submitted the same way, in one session (cross-check {escape(check.run_id)}"
                   f"{escape(over)}): the course harness's mean, do_bench's median, and how many times faster the "
                   "hand-in ran by each.")
    return intro, rows


def _rate(fig: Figure, s: AssignmentSummary) -> str:
    d = fig.derived(s.ceilings)
    return f"{fmt_number(d.tflops, 4)} TFLOP/s" if fig.run.work.flops else f"{fmt_number(d.gbps, 4)} GB/s"


def other_headline_facts(s: AssignmentSummary) -> tuple[list[Markup | str], list[str]]:
    """Page 1's sentence for each headline case other than the report's (versions whose CASES_WHERE leaves
    the report's case out): the fastest version on it, ranked among those versions only, and its comparison
    with the first version on the first case both run; with the names of those fastest versions."""
    out: list[Markup | str] = []
    bests: list[str] = []
    first = next((v for v in s.versions if v.figure is not None), None)
    for case in s.headline_cases[1:]:
        names = ", ".join(v.name for v in s.versions if v.headline_cases and v.benchmark_case == case)
        best = s.best_on(case)
        fig = best.figure if best is not None else None
        if best is None or fig is None:
            out.append(f"{names} leave {s.benchmark_case} out (CASES_WHERE) and have no timed run on {case}, the first "
                       "benchmark case they run, yet.")
            continue
        bests.append(best.name)
        text = (f"On {escape(case)}, the first benchmark case of the versions whose CASES_WHERE leaves "
                f"{escape(s.benchmark_case)} out ({escape(names)}), the fastest of them is {escape(best.name)}: "
                f"{ledger.mark(keys.fig(best.name, case), ms(fig.ms))}, {_rate(fig, s)}")
        c = compare_versions(best, first) if first is not None and first is not best else None
        if c is not None:
            row = Against("first version", c, report_case=s.benchmark_case)
            where = f", {escape(c.where)}" if c.where else ", both figures of one session"
            text += f"; against the first version, {escape(c.theirs)}: {row.label} ({row.times}{where})"
        out.append(Markup(text + "."))
    return out, bests


def course_check(s: AssignmentSummary, version: str) -> CrossCheck | None:
    """The cross-check page 1 reads for a version: the newest whose course-harness runs on the report's case
    covered our figure's window (the figure a course leaderboard ranks by), else the newest; None without one."""
    checks = s.crosschecks_of(version)
    all_runs = {r.run_id: r for v in s.versions for r in v.all_runs}
    full = next((check for check in reversed(checks) for a in agreements_of(check, all_runs)
                 if a.name == version and a.case == s.benchmark_case and a.full_window_means()), None)
    return full or (checks[-1] if checks else None)


def course_mean(s: AssignmentSummary, version: str) -> tuple[float, CrossCheck] | None:
    """The course harness's mean of a version on the report's case over its full-window runs
    (:attr:`Agreement.course_ms`), from :func:`course_check`, with that cross-check; None when no
    cross-check has full-window runs there."""
    check = course_check(s, version)
    if check is None:
        return None
    all_runs = {r.run_id: r for v in s.versions for r in v.all_runs}
    return next(((a.course_ms, check) for a in agreements_of(check, all_runs)
                 if a.name == version and a.case == s.benchmark_case and a.full_window_means()
                 and a.course_ms is not None), None)


def leaderboard_facts(s: AssignmentSummary, handin: str | None = None) -> list[Markup | str]:
    """Where our hand-in (``handin``; without one, the best version) stands against the public results:
    ranked by the course harness's mean (the leaderboard's own measure), with one sentence on how that
    mean relates to its figure."""
    best = next((v for v in s.versions if v.name == handin), None) if handin else s.best
    if best is None or best.figure is None or not s.case_references:
        return []
    fig = best.figure.ms
    found = course_mean(s, best.name)
    course, check = found if found is not None else (None, None)
    out: list[Markup | str] = []
    refs = sorted(s.case_references, key=lambda ref: ref.median_ms)
    for ref in refs:
        card = (f"on another {ref.gpu} in another session" if ref.gpu.lower() == s.gpu.lower()
                else f"on a {ref.gpu}, not this GPU: not comparable as is")
        if course is None:
            out.append(f"{ref.label}: {ms(ref.median_ms)}, {card}. No course-harness run of {best.name} on this card "
                       "over the full window yet, so no rank is claimed.")
            continue
        rank = 1 + sum(1 for x in refs if x.median_ms < course)
        words = ratio_words(ref.median_ms / course)
        if ref is not refs[0]:
            place = ""
        elif len(refs) == 1:
            place = f", so it would place #{rank}, {'ahead of' if rank == 1 else 'behind'} that entry"
        else:
            place = f", so it would place #{rank} against the {len(refs)} public results listed"
        out.append(Markup(
            f"{escape(ref.label)}: {ms(ref.median_ms)}, {escape(card)}. Under the course's own harness, as the "
            f"leaderboard measures, {escape(best.name)} took {ledger.mark(keys.course(best.name, s.benchmark_case), ms(course))} "
            f"on this card: {words} than that entry{place}."))
    if course is not None and check is not None:
        gap = (course / fig - 1) * 100
        side = "the same as" if abs(gap) < 0.05 else f"{abs(gap):.1f} % {'below' if gap < 0 else 'above'}"
        one_session = any(best.figure.run.run_id in e.runs.values() for e in check.entries if e.name == best.name)
        where = ("taken by two timers in one session, the cross-check that also took our figure" if one_session else
                 "taken by two timers in different sessions; Part 2 sets the two timers side by side in one session")
        out.append(Markup(
            f"That course-harness mean is {side} {escape(best.name)}'s figure "
            f"({ledger.mark(keys.fig(best.name, best.benchmark_case), ms(fig))}): both are means of the same calls, "
            f"{where}."))
    return out


def stopping_facts(s: AssignmentSummary, handin: str | None = None) -> list[Markup | str]:
    """Computed sentences for Part 2, beside what page 1 says (the roof, the peers of the run, the
    leaderboard): the best figure's spread and what the cross-checks of the hand-in (``handin``; without
    one, of the best version) measured."""
    best = s.best
    fig = best.figure if best is not None else None
    if best is None or fig is None:
        return [f"No version has a timed run on {s.case_words} yet."]
    r = fig.run
    t = r.timing
    assert t is not None
    figure = ledger.mark(keys.fig(best.name, best.benchmark_case), ms(fig.ms))
    out: list[Markup | str] = [Markup(
        f"The fastest version, {escape(best.name)}, runs {escape(s.case_words)} in {figure}, the {escape(fig.how)} "
        f"(standard error {ms(t.stderr_ms)}; its median, which the dips of a card at its power cap move less, "
        f"{ms(t.median_ms)}).")]
    out += _crosscheck_sentences(s, handin or best.name)
    return out


def agreements_of(check, runs):  # type: ignore[no-untyped-def]
    from ..analysis.crosscheck import agreements

    return agreements(check, runs)


def _crosscheck_sentences(s: AssignmentSummary, version: str) -> list[str]:
    """What the newest cross-check of the version says, in sentences: the course harness's verdict
    and means, do_bench's median, each beside our figure from the same session."""
    from ..analysis.crosscheck import agreements

    checks = s.crosschecks_of(version)
    if not checks:
        cmd = f"report crosscheck {s.assignment.name} {version.split('_')[0]}"
        return [Markup(f"No cross-check of {escape(version)} on this GPU yet (<code>{escape(cmd)}</code> times it with "
                       "the course's harness and do_bench beside ours).")]
    runs = {r.run_id: r for v in s.versions for r in v.all_runs}

    def full(c: Any) -> bool:
        return any(a.full_window_means() for a in agreements(c, runs) if a.name == version and a.case == s.benchmark_case)

    out = []
    # the newest cross-check, and, when the course's rule cut every run of it short, the newest one whose
    # course runs covered the same window as ours
    shown = [checks[-1]] + ([c] if not full(checks[-1]) and (c := next((x for x in reversed(checks) if full(x)),
                                                                         None)) is not None else [])
    for check in shown:
        out += _one_crosscheck(check, runs, s, version)
    return out


def _one_crosscheck(check: Any, runs: dict[str, Run], s: AssignmentSummary, version: str) -> list[str]:
    from ..analysis.crosscheck import AGREEMENT_PCT, agreements

    rows = [a for a in agreements(check, runs) if a.case == s.benchmark_case]
    out = []
    mine = next((a for a in rows if a.name == version), None)
    if mine is not None and mine.ours_ms:
        bits = []
        parts = []
        for (mean, ours, against), n in zip(mine.course_pairs(), mine.course_calls or (None,) * 9):
            if ours is None:
                parts.append(f"{ms(mean)} over {n or '?'} calls")
            elif against == "our figure":
                parts.append(f"{ms(mean)} over {n} calls ({signed_pct((mean / ours - 1) * 100)})")
            else:
                parts.append(f"{ms(mean)} over only {n} calls, the course's rule having stopped it "
                             f"({signed_pct((mean / ours - 1) * 100)} from the mean of our first {n})")
        if parts:
            bits.append("the course's own harness (its eval.py benchmark on the export) " + "; ".join(parts))
        if mine.do_bench_ms is not None:
            bits.append(f"triton's do_bench a median of {ms(mine.do_bench_ms)} ({signed_pct(mine.gap_pct(mine.do_bench_ms))})")
        if bits:
            verdict = ("within" if mine.agrees else "NOT within") + f" {AGREEMENT_PCT:g} %"
            out.append(f"In one session on this card (cross-check {check.run_id}, of {version}), ours measured "
                       f"{ms(mine.ours_ms)}, "
                       + "; ".join(bits) + f": {verdict}.")
    tests = [r for e in check.entries if e.name == version for r in e.course if r.mode == "test"]
    if tests:
        out.append(f"The course's harness in test mode: {tests[-1].verdict or 'no verdict'} on "
                   f"{len(tests[-1].cases)} case{'' if len(tests[-1].cases) == 1 else 's'}" + (f" ({check.course_repo}, commit {check.course_commit[:10]})"
                                                       if check.course_repo and check.course_commit else "") + ".")
    from ..analysis.crosscheck import against_peer

    for a in rows:
        if not a.peer:
            continue
        row = next((r for r in against_peer(check, a.name, runs) if r.case == s.benchmark_case), None)
        if row is None or row.course_ratio is None or row.peer_course_ms is None:
            continue
        c = check.run_id
        peer_ms = ledger.mark(keys.xc(c, a.name, s.benchmark_case, "course"), ms(row.peer_course_ms))
        ratio = ledger.mark(keys.xc_ratio(c, version, a.name, s.benchmark_case, "course"),
                            f"{fmt_number(row.course_ratio, 4)}×")
        how = (f"{escape(version)} is {ratio} faster by the course's own timer" if row.course_ratio >= 1 else
               f"{escape(version)} is slower by the course's own timer: the peer's mean is {ratio} its own")
        out.append(Markup(f"Submitted the same way (through a shim), peer {escape(a.name)} had a course-harness mean of "
                          f"{peer_ms}: {how}."))
    return out


