"""What a cross-check says: per callable and case, our figure beside the course harness's mean
and ``do_bench``'s median from the same session, and whether they agree.

Agreement is within :data:`AGREEMENT_PCT` percent of ours: a figure that no other timer
reproduces that closely is not a result. Where the course's harness ran a case more than once
(the ABBA order of ``report crosscheck``), each of its runs is compared on its own.

Like with like: the course's harness stops a case once the standard error of its mean falls
under 0.1 % of it, after as few as three calls. On a rested card three calls can agree that
closely, and it then reports the mean of three cold calls, before the power-cap dip that a
100-call run goes through: on the H100, 12.14 ms for flashattn v16 where its 100-call runs gave
13.70 and 13.75 ms. Our figure spans 100 calls, or at least 2 s of them (the floor of our stopping
rule). A course run that stopped after fewer calls than ours is compared with the mean of our run's
first as many calls, and the table says so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..records import CrossCheck, CrossCheckEntry, Run

AGREEMENT_PCT = 3.0


@dataclass(frozen=True)
class Agreement:
    name: str
    peer: bool
    case: str
    ours_ms: float | None
    course_means_ms: tuple[float, ...]  # one per benchmark run of the course's harness
    do_bench_ms: float | None
    course_passed: bool | None  # the course's test mode on this case (None: not run)
    course_calls: tuple[int | None, ...] = ()  # how many calls each of those runs timed
    ours_calls: int | None = None  # how many our figure's run timed
    ours_first_ms: tuple[float | None, ...] = ()  # per course run: our mean over as many first calls

    def course_pairs(self) -> list[tuple[float, float | None, str]]:
        """Each course run's mean with what it is compared with: our figure when it timed as many
        calls as we did, else our mean over its number of first calls (None: not known)."""
        out = []
        for i, mean in enumerate(self.course_means_ms):
            n = self.course_calls[i] if i < len(self.course_calls) else None
            if n is None or self.ours_calls is None or n >= self.ours_calls:
                out.append((mean, self.ours_ms, "our figure"))
            else:
                first = self.ours_first_ms[i] if i < len(self.ours_first_ms) else None
                out.append((mean, first, f"our first {n} calls (the course stopped after {n})"))
        return out

    @property
    def course_ms(self) -> float | None:
        """The mean of the course runs that timed as many calls as our figure did (the same window),
        else of all of them."""
        full = self.full_window_means()
        chosen = full or list(self.course_means_ms)
        return statistics.fmean(chosen) if chosen else None

    def full_window_means(self) -> list[float]:
        """The course runs' means that cover our figure's window (as many calls or more)."""
        return [m for m, n in zip(self.course_means_ms, self.course_calls or (None,) * len(self.course_means_ms))
                if n is None or self.ours_calls is None or n >= self.ours_calls]

    def gap_pct(self, other: float | None) -> float | None:
        """How far ``other`` is from ours, in percent of ours (positive: other is slower)."""
        if other is None or not self.ours_ms:
            return None
        return (other / self.ours_ms - 1) * 100

    @property
    def agrees(self) -> bool | None:
        """Whether every other timer lands within AGREEMENT_PCT of ours, each course run against the
        same window of ours (see :meth:`course_pairs`); None when there is nothing to compare."""
        gaps = [(mean / ours - 1) * 100 for mean, ours, _ in self.course_pairs() if ours]
        if self.gap_pct(self.do_bench_ms) is not None:
            gaps.append(self.gap_pct(self.do_bench_ms))  # type: ignore[arg-type]
        return all(abs(g) <= AGREEMENT_PCT for g in gaps) if gaps else None


def _samples(e: CrossCheckEntry, case: str, runs: dict[str, Run]) -> list[float] | None:
    run = runs.get(e.runs.get(case, ""))
    if run is None:
        return None
    t = run.timing if not e.peer else next((p.timing for p in run.peers if p.name == e.name), None)
    return list(t.samples_ms) if t is not None else None


def _entry_agreements(e: CrossCheckEntry, runs: dict[str, Run]) -> list[Agreement]:
    cases = list(dict.fromkeys([*e.figures_ms, *(d.case_name for d in e.do_bench),
                                *(c.case_name for r in e.course for c in r.cases if c.case_name)]))
    out = []
    for case in cases:
        course = [c for r in e.course if r.mode == "benchmark" for c in r.cases
                  if c.case_name == case and c.mean_ms is not None]
        means = tuple(c.mean_ms for c in course)  # type: ignore[misc]
        samples = _samples(e, case, runs)
        firsts = tuple(statistics.fmean(samples[:c.runs]) if samples and c.runs else None for c in course)
        tests = [c.status for r in e.course if r.mode == "test" for c in r.cases if c.case_name == case and c.status]
        bench = [d.median_ms for d in e.do_bench if d.case_name == case]
        out.append(Agreement(name=e.name, peer=e.peer, case=case, ours_ms=e.figures_ms.get(case),
                             course_means_ms=means, do_bench_ms=statistics.median(bench) if bench else None,
                             course_passed=(all(s == "pass" for s in tests) if tests else None),
                             course_calls=tuple(c.runs for c in course),
                             ours_calls=len(samples) if samples else None, ours_first_ms=firsts))
    return out


def agreements(check: CrossCheck, runs: dict[str, Run] | None = None) -> list[Agreement]:
    """Every (callable, case) the cross-check timed, the version's first; ``runs`` (run id -> run,
    the cross-check's own runs) lets a course run that stopped early be set against the same
    window of ours."""
    return [a for e in check.entries for a in _entry_agreements(e, runs or {})]


@dataclass(frozen=True)
class AgainstPeer:
    """One case of a cross-check: the version and a peer by the course harness's mean (its full-window
    runs, :attr:`Agreement.course_ms`) and by do_bench's median, and how many times faster the version
    ran by each (the peer's time over the version's). The one place these ratios are computed: page 1
    and the worklog bindings both print them from here."""

    case: str
    course_ms: float | None
    do_bench_ms: float | None
    peer_course_ms: float | None
    peer_do_bench_ms: float | None

    @property
    def course_ratio(self) -> float | None:
        return self.peer_course_ms / self.course_ms if self.course_ms and self.peer_course_ms else None

    @property
    def do_bench_ratio(self) -> float | None:
        return self.peer_do_bench_ms / self.do_bench_ms if self.do_bench_ms and self.peer_do_bench_ms else None


def against_peer(check: CrossCheck, peer: str, runs: dict[str, Run] | None = None) -> list[AgainstPeer]:
    """The cross-check's version against ``peer``, case by case in the order the version was timed;
    a case the peer was not timed on has no ratios."""
    rows = agreements(check, runs)
    mine = [a for a in rows if a.name == check.version and not a.peer]
    theirs = {a.case: a for a in rows if a.name == peer}
    out = []
    for a in mine:
        p = theirs.get(a.case)
        out.append(AgainstPeer(case=a.case, course_ms=a.course_ms, do_bench_ms=a.do_bench_ms,
                               peer_course_ms=p.course_ms if p else None, peer_do_bench_ms=p.do_bench_ms if p else None))
    return out


def runs_of(check: CrossCheck, logs) -> dict[str, Run]:  # type: ignore[no-untyped-def]
    """The runs a cross-check made, by id, read from ``logs`` (missing ones are left out)."""
    from .. import store

    ids = {rid for e in check.entries for rid in e.runs.values()}
    return {r.run_id: r for r in store.runs(logs, check.assignment, check.version) if r.run_id in ids}


def course_verdicts(check: CrossCheck) -> dict[str, list[str]]:
    """Per callable, the course harness's closing verdict of each run ('pass'/'fail'/'none')."""
    return {e.name: [f"{r.mode} {r.verdict or 'none'}" for r in e.course] for e in check.entries}
