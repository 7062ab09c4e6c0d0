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
instead of 13.3 ms. A 100-call run (the course's, and ours) spans that dip; the mean counts it,
as the course's harness does, and the median does not: in one session the course harness gave
13.70 and 13.75 ms, ``do_bench`` 13.91 ms, our mean 13.82 ms and our median 13.33 ms.
``report crosscheck`` records all of them side by side. Verdicts between runs (`report diff`)
test the whole samples and compare medians, which the dip moves less.
"""

from __future__ import annotations

from collections.abc import Iterable
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
