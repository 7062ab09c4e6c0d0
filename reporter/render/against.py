"""How a page prints one comparison (reporter.analysis.compare): its label, its two times and its
sentence, each figure and ratio marked for the consistency check (reporter.render.ledger). Page 1,
the steps table, a step's section and appendix B all print a comparison through :class:`Against`."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup, escape

from ..analysis import keys
from ..analysis.compare import Comparison
from ..analysis.diff import format_p
from ..records import Run
from . import ledger
from .numbers import ms


@dataclass
class Against:
    """One line of a step's comparisons: the comparison (reporter.analysis.compare) and how the page
    prints it, each figure and ratio marked for the consistency check (reporter.render.ledger)."""

    kind: str  # 'previous version' | 'first version' | 'peer, same run'
    c: Comparison
    host: str = ""  # 'host-bound: v15, v16': the sides whose samples follow the host's queuing time
    report_case: str = ""  # the report's case: a comparison taken on another one (CASES_WHERE) says which

    @property
    def on(self) -> str:
        """' on big_half' when the comparison is taken on a case other than the report's, else ''."""
        return f" on {self.c.case}" if self.report_case and self.c.case != self.report_case else ""

    @property
    def against(self) -> str:
        return self.c.theirs

    @property
    def tone(self) -> str:
        return self.c.tone

    @property
    def label(self) -> Markup:
        """'1.28× faster, within noise', the ratio marked ('1.28× faster on big_half, …' when taken on a
        case other than the report's)."""
        ratio = ledger.mark(keys.cmp(self.c.mine, self.c.theirs, self.c.case), self.c.ratio)
        if self.on:
            ratio = Markup(f"{ratio}{escape(self.on)}")
        tone = ledger.mark(keys.tone(self.c.mine, self.c.theirs, self.c.case), self.c.qualifier) \
            if self.c.qualifier else ""
        return Markup(f"{ratio}, {tone}") if tone else ratio

    @property
    def times(self) -> Markup:
        """The two times the ratio divides, theirs then mine, each marked with what it is."""
        c = self.c
        if c.pair is None:
            return Markup(f"{ledger.mark(keys.peer(c.run_id, c.theirs), ms(c.theirs_ms))} against "
                          f"{ledger.mark(keys.fig(c.mine, c.case), ms(c.mine_ms))}")
        p = c.pair

        def one(run: Run, value: float, version: str) -> Markup:
            key = keys.fig(version, c.case) if p.figures else keys.run(run.run_id)
            return ledger.mark(key, ms(value))

        return Markup(f"{one(p.theirs, c.theirs_ms, c.theirs)} → {one(p.mine, c.mine_ms, c.mine)}")

    @property
    def where(self) -> str:
        return self.c.where

    @property
    def p_words(self) -> str:
        """'p=3e-12', 'p<1e-300': the test's p, for a compact line."""
        v = self.c.verdict
        if v is None or v.p_value is None:
            return ""
        return format_p(v.p_value)

    @property
    def sentence(self) -> Markup:
        """Appendix B's line: the label, the times, where, the test."""
        c = self.c
        bits = [str(escape(c.where))] if c.where else []
        v = c.verdict
        if v is None:
            bits.append(f"not tested: {escape(c.untested)}")
        elif v.p_value is None:
            bits.append(f"not tested: {escape(v.reason)}")
        else:
            bits.append(f"{escape(v.test)} {escape(format_p(v.p_value))}"
                        + (f", under the {v.min_effect_pct:g} % minimum effect" if v.verdict == "same" and v.significant
                           else ""))
        return Markup(f"{self.label} (mean {self.times}; {'; '.join(bits)})")


