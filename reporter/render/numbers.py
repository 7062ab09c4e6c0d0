"""How the report writes a time and a share: one format everywhere (a ratio: reporter.analysis.diff.ratio_words)."""

from __future__ import annotations

from ..analysis.facts import fmt_number


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
