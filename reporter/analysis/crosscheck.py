"""What a cross-check says: per callable and case, our figure beside the course harness's mean
and ``do_bench``'s median from the same session, and whether they agree.

Agreement is within :data:`AGREEMENT_PCT` percent of ours: a figure that no other timer
reproduces that closely is not a result. Where the course's harness ran a case more than once
(the ABBA order of ``report crosscheck``), its mean is the mean of those runs' means.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..records import CrossCheck, CrossCheckEntry

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

    @property
    def course_ms(self) -> float | None:
        return statistics.fmean(self.course_means_ms) if self.course_means_ms else None

    def gap_pct(self, other: float | None) -> float | None:
        """How far ``other`` is from ours, in percent of ours (positive: other is slower)."""
        if other is None or not self.ours_ms:
            return None
        return (other / self.ours_ms - 1) * 100

    @property
    def agrees(self) -> bool | None:
        """Whether every other timer lands within AGREEMENT_PCT of ours (None: nothing to compare)."""
        gaps = [g for g in (self.gap_pct(self.course_ms), self.gap_pct(self.do_bench_ms)) if g is not None]
        return all(abs(g) <= AGREEMENT_PCT for g in gaps) if gaps else None


def _entry_agreements(e: CrossCheckEntry) -> list[Agreement]:
    cases = list(dict.fromkeys([*e.figures_ms, *(d.case_name for d in e.do_bench),
                                *(c.case_name for r in e.course for c in r.cases if c.case_name)]))
    out = []
    for case in cases:
        means = tuple(c.mean_ms for r in e.course if r.mode == "benchmark" for c in r.cases
                      if c.case_name == case and c.mean_ms is not None)
        tests = [c.status for r in e.course if r.mode == "test" for c in r.cases if c.case_name == case and c.status]
        bench = [d.median_ms for d in e.do_bench if d.case_name == case]
        out.append(Agreement(name=e.name, peer=e.peer, case=case, ours_ms=e.figures_ms.get(case),
                             course_means_ms=means, do_bench_ms=statistics.median(bench) if bench else None,
                             course_passed=(all(s == "pass" for s in tests) if tests else None)))
    return out


def agreements(check: CrossCheck) -> list[Agreement]:
    """Every (callable, case) the cross-check timed, the version's first."""
    return [a for e in check.entries for a in _entry_agreements(e)]


def course_verdicts(check: CrossCheck) -> dict[str, list[str]]:
    """Per callable, the course harness's closing verdict of each run ('pass'/'fail'/'none')."""
    return {e.name: [f"{r.mode} {r.verdict or 'none'}" for r in e.course] for e in check.entries}
