"""How the report writes a time, a ratio and a share: one format everywhere."""

from __future__ import annotations

from ..analysis.facts import fmt_number


def ms(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{fmt_number(x * 1e3, 4)} µs" if x < 1 else f"{fmt_number(x, 4)} ms"


def times(x: float | None) -> str:
    return "–" if x is None else f"{fmt_number(x, 3)}×"


def pct(x: float | None) -> str:
    return "–" if x is None else f"{fmt_number(100 * x, 3)} %"


def signed_pct(x: float) -> str:
    """A change in percent with its sign, one decimal: '+0.9 %', '-1.7 %'; a change that rounds to
    zero is '+0.0 %', never '-0.0 %'."""
    text = f"{x:+.1f}"
    return f"{'+0.0' if text == '-0.0' else text} %"


def speedup_words(theirs: float, mine: float) -> str:
    """'1.05× faster' or '1.10× slower': how ``mine`` compares with ``theirs`` (both times)."""
    return f"{times(theirs / mine)} faster" if theirs >= mine else f"{times(mine / theirs)} slower"


def session_words(session_id: str, short: bool = False) -> str:
    """'the session of 2026-11-22 18:33 UTC' (short: 'the 22 Nov 18:33 session') for a session id such
    as '20261122T183331101Z'."""
    from datetime import datetime

    try:
        t = datetime.strptime(session_id[:13], "%Y%m%dT%H%M")
    except ValueError:
        return f"session {session_id}"
    return f"the {t:%d %b %H:%M} session" if short else f"the session of {t:%Y-%m-%d %H:%M} UTC"
