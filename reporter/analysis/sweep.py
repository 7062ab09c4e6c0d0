"""What a sweep decided: the fastest configuration, and every one that cannot be told apart from it.

A sweep's lowest mean is only a choice when the others are measurably slower. Each timed
configuration is compared with the fastest by the one test every comparison uses
(:func:`reporter.analysis.diff.compare_timing`: Welch's t-test on the means, and a minimum
effect); those it calls "same" are tied with the fastest, and a report says so instead of
crowning the minimum.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records import Sweep, SweepPoint
from .diff import Verdict, compare_timing


@dataclass(frozen=True)
class SweepStanding:
    point: SweepPoint
    fastest: bool
    verdict: Verdict | None  # against the fastest (None for the fastest itself and for untimed points)

    @property
    def tied(self) -> bool:
        """Cannot be told apart from the fastest (the fastest itself included)."""
        return self.fastest or (self.verdict is not None and self.verdict.verdict == "same")


def config_name(config: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


def standings(sw: Sweep) -> list[SweepStanding]:
    """Every point of the sweep, in its order, with its verdict against the fastest."""
    best = sw.best()
    out = []
    for p in sw.points:
        if p is best:
            out.append(SweepStanding(p, True, None))
        elif best is not None and p.timing is not None and best.timing is not None \
                and (p.check is None or p.check.passed):
            out.append(SweepStanding(p, False, compare_timing(best.timing, p.timing)))
        else:
            out.append(SweepStanding(p, False, None))
    return out


def tied_with_fastest(sw: Sweep) -> list[SweepPoint]:
    """The fastest configuration and every one the test cannot tell apart from it, fastest first."""
    tied = [s.point for s in standings(sw) if s.tied]
    return sorted(tied, key=lambda p: p.timing.mean_ms if p.timing else float("inf"))


def decision(sw: Sweep) -> str:
    """One sentence: 'STAGES=2 is the fastest; STAGES=3 cannot be told apart from it (p = 0.41).'"""
    ranked = standings(sw)
    best = next((s for s in ranked if s.fastest), None)
    if best is None:
        return "no configuration was timed"
    ties = [s for s in ranked if s.tied and not s.fastest]
    head = f"{config_name(best.point.config)} has the lowest mean"
    if not ties:
        timed = sum(1 for s in ranked if s.point.timing is not None)
        return head + (f", measurably ahead of the other {timed - 1}" if timed > 1 else "")
    parts = []
    for s in ties:
        v = s.verdict
        assert v is not None
        why = f"p = {v.p_value:.2g}" if v.p_value is not None else v.test
        if v.reason:
            why = v.reason
        parts.append(f"{config_name(s.point.config)} ({why})")
    return f"{head}; {', '.join(parts)} cannot be told apart from it: the sweep does not decide between them"


def note(s: SweepStanding) -> str:
    """A table cell: 'fastest', 'tied with the fastest (p = 0.39)', 'slower, 1.07× (p = 1e-09)'."""
    if s.fastest:
        return "fastest"
    v = s.verdict
    if v is None:
        return (s.point.error or "not timed")[:90]
    why = f"p = {v.p_value:.2g}" if v.p_value is not None else v.test
    if v.verdict == "same" and v.significant and not v.reason:  # apart, but by less than counts
        return f"tied with the fastest: {abs(v.change_pct):.1f} % apart, under the {v.min_effect_pct:g} % that counts ({why})"
    if v.verdict == "same":
        return f"tied with the fastest ({v.reason or why})"
    return f"{v.ratio:.2f}× slower ({why})"
