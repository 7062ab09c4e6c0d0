"""The report's consistency check: everything it prints about a measurement, said one way.

While rendering, every figure, run time, ratio and verdict placed in the document is printed
through :func:`mark`, which wraps it in ``<span data-k="KEY">`` naming what it stands for, with a key
from :mod:`reporter.analysis.keys` (a version's figure on a case, one run's mean, a peer's mean in a
run, one version against another and the verdict's word, a version's course-harness mean).

:func:`contradictions` reads the finished HTML back and groups the marks by key: two marks of one
key must print the same value up to rounding (the intervals their printed digits stand for
overlap) and the same unit, direction or word. ``report build`` fails on a contradiction, or
warns with ``--warn-contradictions``; a test builds every committed report with the check on.
"""

from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass

from markupsafe import Markup, escape

_MARK = re.compile(r'<span data-k="([^"]+)"(?: data-u="([^"]*)")?>(.*?)</span>', re.DOTALL)
_TAGS = re.compile(r"<[^>]+>")
_NUMBER = re.compile(r"(-?[\d,]*\.?\d+)\s*(µs|ms|s|×|%)?")
_UNIT_MS = {"µs": 1e-3, "ms": 1.0, "s": 1e3}


def mark(key: str, text: object, unit: str = "") -> Markup:
    """``text`` as printed, registered as standing for ``key`` (see the module's list of keys). ``unit``
    names the unit of a bare number whose unit the prose around it types ('ms', 'µs', 'speedup')."""
    if any(c in key for c in '"<|'):  # '|' would split a markdown table's cell around a bound number
        raise ValueError(f"ledger key {key!r} holds a quote, '<' or '|'")
    u = f' data-u="{escape(unit)}"' if unit else ""
    return Markup(f'<span data-k="{escape(key)}"{u}>{escape(text)}</span>')


@dataclass(frozen=True)
class Printed:
    key: str
    text: str


@dataclass(frozen=True)
class Contradiction:
    key: str
    texts: list[str]

    def __str__(self) -> str:
        return f"{self.key} is printed as " + " and as ".join(f"'{t}'" for t in self.texts)


def marks(document: str) -> list[Printed]:
    """Every mark in an HTML document, in order."""
    out = []
    for k, unit, t in _MARK.findall(document):
        text = " ".join(html_lib.unescape(_TAGS.sub("", t)).split())
        if unit == "speedup":
            text = f"{text}×"
        elif unit:
            text = f"{text} {html_lib.unescape(unit)}"
        out.append(Printed(html_lib.unescape(k), text))
    return out


def _interval(text: str) -> tuple[float, float, str] | None:
    """The values a printed number stands for, in one canonical unit: a time in ms ('13.72 ms' ->
    (13.715, 13.725, 'ms')); a ratio as a speedup, theirs over mine ('1.28× faster' -> (1.275, 1.285),
    '1.25× slower' -> (1/1.255, 1/1.245), a bare '8.73×' as written); a percentage as is."""
    m = _NUMBER.search(text)
    if m is None:
        return None
    digits, unit = m.group(1).replace(",", ""), m.group(2) or ""
    value = float(digits)
    half = 0.5 * 10 ** -(len(digits.split(".")[1]) if "." in digits else 0)
    lo, hi = value - half, value + half
    if unit in _UNIT_MS:
        scale = _UNIT_MS[unit]
        return lo * scale, hi * scale, "ms"
    if unit == "×":
        if "slower" in text[m.end():]:
            return (1 / hi, 1 / lo if lo > 0 else float("inf"), "×")
        return lo, hi, "×"
    return lo, hi, unit


def _agree(a: str, b: str) -> bool:
    if a == b:
        return True
    ia, ib = _interval(a), _interval(b)
    if ia is None or ib is None or ia[2] != ib[2]:
        return False
    return ia[0] <= ib[1] + 1e-12 and ib[0] <= ia[1] + 1e-12


def contradictions(document: str) -> list[Contradiction]:
    """The keys printed with values that disagree beyond rounding (or, for words, at all)."""
    seen: dict[str, list[str]] = {}
    for p in marks(document):
        seen.setdefault(p.key, [])
        if p.text not in seen[p.key]:
            seen[p.key].append(p.text)
    out = []
    for key, texts in seen.items():
        if key.startswith("tone:"):
            bad = len(texts) > 1
        else:
            bad = any(not _agree(a, b) for i, a in enumerate(texts) for b in texts[i + 1:])
        if bad:
            out.append(Contradiction(key, texts))
    return out


def plain(document: str) -> str:
    """The document without its marks: each marked value as printed."""
    return _MARK.sub(lambda m: m.group(3), document)
