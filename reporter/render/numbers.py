"""How the report writes a time, a share and a run's stopping rule: one format everywhere (a ratio:
reporter.analysis.diff.ratio_words)."""

from __future__ import annotations

import math

from ..analysis.facts import fmt_number
from ..records import TimingStats


def ms(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{fmt_number(x * 1e3, 4)} µs" if x < 1 else f"{fmt_number(x, 4)} ms"


def pct(x: float | None) -> str:
    return "–" if x is None else f"{fmt_number(100 * x, 3)} %"


def signed_pct(x: float) -> str:
    """A change in percent with its sign, one decimal: '+0.9 %', '-1.7 %'; a change that rounds to
    zero is '+0.0 %', never '-0.0 %'."""
    text = f"{x:+.1f}"
    return f"{'+0.0' if text == '-0.0' else text} %"


_STOPPED = {
    "stderr": "its standard error fell under the target",
    "budget": "its timed calls reached the budget",
    "wall": "it reached the wall-time limit",
    "max_reps": "it reached the most calls",
}


def stopping_rule(t: TimingStats) -> str:
    """The rule a run was repeated under, in words: '10 to 100 calls (at least 2 s of them, unless the 100 come
    first), stopping earlier once the standard error falls under 0.1 % of the mean, the timed calls add up to
    10 s or 120 s have passed'; 'exactly 100 calls' where the floor is the most. Records made before the
    course's rule bounded wall time with their budget, and kept no floor."""
    target = f"{100 * t.target_rel_stderr:g} % of the mean"
    if t.budget_of == "calls" and t.min_reps and t.max_reps:
        if t.min_reps >= t.max_reps:
            return f"exactly {t.max_reps} calls"
        span = f" (at least {t.min_span_s:g} s of them, unless the {t.max_reps} come first)" if t.min_span_s else ""
        stops = [f"the standard error falls under {target}", f"the timed calls add up to {t.budget_s:g} s"]
        if t.wall_s:
            stops.append(f"{t.wall_s:g} s have passed")
        listed = stops[0] if len(stops) == 1 else ", ".join(stops[:-1]) + " or " + stops[-1]
        return f"{t.min_reps} to {t.max_reps} calls{span}, stopping earlier once {listed}"
    return (f"calls until the standard error falls under {target}, {t.budget_s:g} s of wall time "
            "have passed or the run's most calls are made")


def stopped_by(t: TimingStats) -> str:
    """Why a run's repetition ended: 'n=10, stopped as its timed calls reached the budget' (records made
    before the course's rule: its wall-time budget)."""
    why = _STOPPED.get(t.stop_reason, t.stop_reason)
    if t.stop_reason == "budget" and t.budget_of != "calls":
        why = "it reached its wall-time budget"
    return f"n={t.n}, stopped as {why}"


def coverage(c: float) -> str:
    """A confidence interval's coverage: '95%', '99.8%'; rounded down, so that an interval short of certain is
    never printed as 100%."""
    return f"{math.floor(c * 1000) / 10:g}%"
