"""Which run stands for a version, and which figure is the version's time: one rule, in one place.

The report, `report list`, `report show`, the export header and the worklog bindings all ask
this module, so a version has one time wherever it is named.

**Which run.** Among the runs of one version on one case and one GPU, the kind of timing
decides first, then the date (the newest of the best kind):

1. ``rested``: timed on its own, with plain events, after the GPU was left idle (``report
   run``'s default). This is how a course harness times a submission: a fresh process, seconds
   of idle start-up, then back-to-back calls with the L2 cleared before each;
2. ``alone``: timed on its own with plain events but without a rest (every run recorded before
   the rests): its time depends on how hot the card was from what ran before;
3. ``interleaved``: timed in rounds with other callables (``--interleave``). A comparison, not
   a figure: a round's slower, less power-dense peers hold the card's power under its cap, so
   its clocks run higher than when the version runs alone (on the H100, flashattn v15's
   interleaved samples ran at a median 1710 MHz against 1515–1575 MHz alone);
4. ``held``: ``--hold`` leaves the host's launch time out of the samples, which a course
   harness counts;
5. ``ranked``: a fresh input before every call lets the card cool between calls.

A run whose check failed has no time; it stands only when it is the newest run of all, so a
version broken by its latest change shows as broken.

**Which figure.** The standing run's mean, the course harness's statistic. A card at its power
cap dips: on the H100, about a second into back-to-back calls of flashattn's benchmark case the
SM clock fell from 1515 to 1185 MHz for a few tenths of a second and calls took up to 16.4 ms
instead of 13.3 ms. A 100-call run (the course's, and ours: our floor of 2 s of calls reaches the dip
before any stop but the 100th call) spans that dip; the mean counts it,
as the course's harness does, and the median does not: in one session the course harness gave
13.70 and 13.75 ms, ``do_bench`` 13.91 ms, our mean 13.82 ms and our median 13.33 ms.
``report crosscheck`` records all of them side by side. Comparisons between versions use the same
statistic: the ratio of two means, tested by Welch's t-test on the samples
(:mod:`reporter.analysis.compare`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .records import DeviceCeilings, Derived, PeerResult, Run, TimingStats, derive

STATISTIC = "mean"

KINDS = ("rested", "alone", "interleaved", "held", "ranked")
KIND_WORDS = {
    "rested": "timed alone from a rested card",
    "alone": "timed alone, with no rest before it",
    "interleaved": "timed interleaved with other callables",
    "held": "timed with the stream held (host launch time left out)",
    "ranked": "timed ranked (a fresh input before each call)",
}


def kind_of(t: TimingStats) -> str:
    """The kind of timing a run holds, one of :data:`KINDS`."""
    if t.ranked:
        return "ranked"
    if t.method.endswith("+hold"):
        return "held"
    if t.interleaved:
        return "interleaved"
    return "rested" if t.rested else "alone"


def _rank(r: Run) -> int:
    return KINDS.index(kind_of(r.timing)) if r.timing is not None else len(KINDS)


def standing_runs(runs: Iterable[Run], *, gpu: str | None = None) -> dict[tuple[str, str], Run]:
    """The run that stands for each (version, case), optionally of one GPU slug."""
    groups: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        if gpu is None or r.device.slug == gpu:
            groups.setdefault((r.version, r.case_name), []).append(r)
    out: dict[tuple[str, str], Run] = {}
    for key, rs in groups.items():
        newest = max(rs, key=lambda r: r.created_utc)
        timed = [r for r in rs if r.timing is not None]
        if newest.timing is None or not timed:
            out[key] = newest
            continue
        best = min(_rank(r) for r in timed)
        out[key] = max((r for r in timed if _rank(r) == best), key=lambda r: r.created_utc)
    return out


def standing_run(runs: Iterable[Run], version: str, case: str, *, gpu: str | None = None) -> Run | None:
    return standing_runs((r for r in runs if r.version == version and r.case_name == case), gpu=gpu).get(
        (version, case))


@dataclass(frozen=True)
class Figure:
    """A version's time on a case: the standing run's mean, and how it was taken."""

    run: Run
    ms: float
    kind: str

    @property
    def how(self) -> str:
        """E.g. 'mean of 100 calls timed alone from a rested card (5 s idle, then 3 warm-up calls), L2
        cleared before each'."""
        t = self.run.timing
        assert t is not None
        rest = f" ({t.rest_s:g} s idle, then {t.warmup_reps} warm-up calls)" if self.kind == "rested" else ""
        flush = ", L2 cleared before each" if t.l2_flush else ""
        return f"{STATISTIC} of {t.n} calls {KIND_WORDS[self.kind]}{rest}{flush}"

    def derived(self, ceilings: DeviceCeilings | None) -> Derived:
        """TFLOP/s, GB/s, share of the roof: from this figure (records made before figures were means
        derived theirs from the median)."""
        return derive(self.run.work, self.ms, ceilings)


def figure(run: Run | None) -> Figure | None:
    """The figure a run gives its version, None when it has no time (its check failed)."""
    if run is None or run.timing is None:
        return None
    return Figure(run=run, ms=run.timing.mean_ms, kind=kind_of(run.timing))


def figure_ms(t: TimingStats | None) -> float | None:
    """The figure of any timing (a peer's in a run, a sweep point's): its mean."""
    return t.mean_ms if t is not None else None


def peer_ms(p: PeerResult) -> float | None:
    return figure_ms(p.timing)


# --------------------------------------------------------------------------- which runs compare two versions

#: The kinds of timing a comparison of two versions prefers, when their figures come from different
#: sessions and it looks for one session that timed both: rested runs as the figures are, then runs
#: interleaved in the same rounds, then back to back, ranked and held ones.
COMPARE_ORDER = ("rested", "interleaved", "alone", "ranked", "held")


@dataclass(frozen=True)
class Pairing:
    """The two runs a comparison of two versions stands on, and whether they are the figures."""

    mine: Run
    theirs: Run
    figures: bool  # both runs are their versions' figures

    @property
    def same_session(self) -> bool:
        return self.mine.session_id == self.theirs.session_id

    @property
    def mine_ms(self) -> float:
        assert self.mine.timing is not None
        return self.mine.timing.mean_ms

    @property
    def theirs_ms(self) -> float:
        assert self.theirs.timing is not None
        return self.theirs.timing.mean_ms

    @property
    def speedup(self) -> float:
        """How many times faster ``mine`` ran than ``theirs`` (below 1: slower)."""
        return self.theirs_ms / self.mine_ms

    @property
    def kind(self) -> str:
        assert self.mine.timing is not None
        return kind_of(self.mine.timing)


def comparison_case(mine: Sequence[str], theirs: Sequence[str]) -> str | None:
    """The one case two versions are compared on: the first of ``mine`` (one version's headline cases,
    :meth:`reporter.assignments.Assignment.headline_cases`, in the order of the benchmark cases) that is
    among ``theirs``; the same either way round. None when the two run no benchmark case in common: no
    ratio is then printed, rather than one between two cases."""
    return next((c for c in mine if c in theirs), None)


def pairing(mine: Iterable[Run], theirs: Iterable[Run], case: str, *, gpu: str | None = None) -> Pairing | None:
    """Which runs compare one version (``mine``: its runs) with another: a speedup measured across
    sessions measures the card's state as much as the code (on the H100, one kernel's rested mean
    moved by 2 % between two sessions six minutes apart).

    1. Their figures, when one session timed both (the usual case: ``report run`` times every version);
    2. else the newest pair of runs of one session timed the same way, preferring the kinds in the
       order of :data:`COMPARE_ORDER`;
    3. else their figures, from different sessions (``same_session`` is False: say so).

    None when either version has no figure on the case."""
    mine_runs = [r for r in mine if r.case_name == case and (gpu is None or r.device.slug == gpu)]
    theirs_runs = [r for r in theirs if r.case_name == case and (gpu is None or r.device.slug == gpu)]
    fa = figure(standing_run(mine_runs, mine_runs[0].version, case) if mine_runs else None)
    fb = figure(standing_run(theirs_runs, theirs_runs[0].version, case) if theirs_runs else None)
    if fa is None or fb is None:
        return None
    if fa.run.session_id == fb.run.session_id:
        return Pairing(fa.run, fb.run, figures=True)
    best: tuple[tuple[int, float], Run, Run] | None = None
    for a in mine_runs:
        if a.timing is None:
            continue
        for b in theirs_runs:
            if b.timing is None or b.session_id != a.session_id or kind_of(b.timing) != kind_of(a.timing):
                continue
            if not a.timing.timed_like(b.timing):
                continue
            key = (COMPARE_ORDER.index(kind_of(a.timing)), -max(a.created_utc, b.created_utc).timestamp())
            if best is None or key < best[0]:
                best = (key, a, b)
    if best is not None:
        return Pairing(best[1], best[2], figures=False)
    return Pairing(fa.run, fb.run, figures=True)

