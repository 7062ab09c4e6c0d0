"""Page 1 and Part 2 of the report, computed from the records: the best version's figure, its
speedup over the first version and over the peers timed in its own run, the public references
(labelled with the card they were measured on), where it stands against its roof, and what the
cross-checks (the course's harness, do_bench) measured beside it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from ..analysis.facts import fmt_number
from ..analysis.listing import timed_peers
from ..analysis.summary import AssignmentSummary
from ..records import Run
from ..standing import KIND_WORDS, peer_ms
from .numbers import ms, pct, session_words, signed_pct, speedup_words, times


@dataclass
class Cover:
    best: str | None
    figure: str = ""
    how: str = ""
    rate: str = ""
    facts: list[str] = field(default_factory=list)  # 'against what', one sentence each
    roof: str = ""


def cover(s: AssignmentSummary) -> Cover:
    best = s.best
    fig = best.figure if best is not None else None
    if best is None or fig is None:
        return Cover(best=None, facts=[f"No version has a timed run on {s.case_words} yet."])
    r, d = fig.run, fig.derived(s.ceilings)
    rate = f"{fmt_number(d.tflops, 4)} TFLOP/s" if r.work.flops else f"{fmt_number(d.gbps, 4)} GB/s"
    facts = []
    first = next((v for v in s.versions if v.figure is not None), None)
    pair = best.against(first) if first is not None and first is not best else None
    if first is not None and pair is not None:
        if pair.figures and pair.same_session:
            facts.append(f"{speedup_words(pair.theirs_ms, pair.mine_ms)} than the first version, {first.name} "
                         f"({ms(pair.theirs_ms)}, timed in the same session).")
        elif pair.figures:
            facts.append(f"{speedup_words(pair.theirs_ms, pair.mine_ms)} than the first version, {first.name} "
                         f"({ms(pair.theirs_ms)}; no session timed both, so the card's state may differ).")
        else:
            facts.append(f"{speedup_words(pair.theirs_ms, pair.mine_ms)} than the first version, {first.name}, "
                         f"in {session_words(pair.mine.session_id)}: {ms(pair.theirs_ms)} against "
                         f"{ms(pair.mine_ms)}, both {KIND_WORDS[pair.kind]}.")
    peers = timed_peers(r)
    for p in sorted(peers, key=lambda p: peer_ms(p) or 0.0):
        t = peer_ms(p)
        assert t is not None
        facts.append(f"{speedup_words(t, fig.ms)} than {p.name} ({p.description}): {ms(t)}, timed in the same run "
                     "the same way.")
    if not peers:
        facts.append("No peer was timed in the same run, so none is compared here.")
    for ref in s.case_references:
        card = (f"measured on another {ref.gpu} in another session" if ref.gpu.lower() == s.gpu.lower()
                else f"measured on a {ref.gpu}, not this GPU")
        facts.append(f"{ref.label}: {ms(ref.median_ms)}, {card} (not timed here; {speedup_words(ref.median_ms, fig.ms)}"
                     " on paper).")
    roof = ""
    if d.floor_ms and d.ceiling_value:
        roof = (f"It reaches {pct(d.fraction_of_ceiling)} of the measured ceiling ({d.ceiling}: "
                f"{fmt_number(d.ceiling_value, 4)} {d.ceiling_unit or ''}): the work model's floor is {ms(d.floor_ms)}, "
                f"so at most {ms(fig.ms - d.floor_ms)} ({pct(1 - d.floor_ms / fig.ms)} of its time) remain to be won.")
    return Cover(best=best.name, figure=ms(fig.ms), how=fig.how, rate=rate, facts=facts, roof=roof)


def stopping_facts(s: AssignmentSummary) -> list[str]:
    """Computed sentences for Part 2, beside what page 1 says (the roof, the peers of the run):
    the best figure's spread, what the cross-checks measured, and the public results set beside
    our export under the course's own harness."""
    best = s.best
    fig = best.figure if best is not None else None
    if best is None or fig is None:
        return [f"No version has a timed run on {s.case_words} yet."]
    r = fig.run
    t = r.timing
    assert t is not None
    out = [(f"The fastest version, {best.name}, runs {s.case_words} in {ms(fig.ms)}, the {fig.how} (standard "
            f"error {ms(t.stderr_ms)}; its median, which the dips of a card at its power cap move less, "
            f"{ms(t.median_ms)}).")]
    out += _crosscheck_sentences(s, best.name)
    all_runs = {r.run_id: r for v in s.versions for r in v.all_runs}
    course_mine = next((statistics.fmean(a.full_window_means())
                        for check in reversed(s.crosschecks_of(best.name))
                        for a in agreements_of(check, all_runs)
                        if a.name == best.name and a.case == s.benchmark_case and a.full_window_means()), None)
    for ref in s.case_references:
        where = (f"a public result ({ref.source or 'source not named'}), measured on another {ref.gpu} in another "
                 "session" if ref.gpu.lower() == s.gpu.lower() else
                 f"a public result measured on a {ref.gpu}, not this GPU: not comparable as is")
        if course_mine is not None:
            rel = ref.median_ms / course_mine
            out.append(f"{ref.label}: {ms(ref.median_ms)}, {where}. Our export under the same course harness "
                       f"took {ms(course_mine)} on this card: {times(rel if rel > 1 else 1 / rel)} "
                       f"{'faster' if rel > 1 else 'slower'} than that entry, with that caveat.")
        else:
            out.append(f"{ref.label}: {ms(ref.median_ms)}, {where}; no course-harness run of {best.name} over "
                       "the full window on this card to set beside it.")
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
        return [(f"No cross-check of {version} on this GPU yet (`report crosscheck {s.assignment.name} "
                 f"{version.split('_')[0]}` times it with the course's harness and do_bench beside ours).")]
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
            out.append(f"In one session on this card (cross-check {check.run_id}), ours measured {ms(mine.ours_ms)}, "
                       + "; ".join(bits) + f": {verdict}.")
    tests = [r for e in check.entries if e.name == version for r in e.course if r.mode == "test"]
    if tests:
        out.append(f"The course's harness in test mode: {tests[-1].verdict or 'no verdict'} on "
                   f"{len(tests[-1].cases)} case{'' if len(tests[-1].cases) == 1 else 's'}" + (f" ({check.course_repo}, commit {check.course_commit[:10]})"
                                                       if check.course_repo and check.course_commit else "") + ".")
    for a in rows:
        theirs, ours_full = a.full_window_means(), mine.full_window_means() if mine is not None else []
        if a.peer and theirs and ours_full:
            rel = statistics.fmean(theirs) / statistics.fmean(ours_full)
            out.append(f"Submitted the same way (through a shim), peer {a.name} had a course-harness mean of "
                       f"{ms(statistics.fmean(theirs))} over its full runs: {version} is "
                       f"{times(rel if rel > 1 else 1 / rel)} {'faster' if rel > 1 else 'slower'} under the "
                       "course's own timer.")
    return out


