"""One version against another: the one comparison every output prints.

Page 1, the steps table, a version's section, appendix B, ``report list`` and ``report diff``
all ask :func:`compare_versions` (or :func:`compare_runs` for two named runs), so "v05 against
v04" has one ratio, one verdict and one wording wherever it appears:

* **the case** is one: the first benchmark case both versions run (the report's case, unless a
  version's ``CASES_WHERE`` leaves it out: :func:`reporter.standing.comparison_case`); two versions
  that share none are not compared;
* **the runs** are those :func:`reporter.standing.pairing` picks: the two versions' figures when
  one session timed both, else the newest pair of runs of one session timed the same way, else
  the figures from two sessions. Which it was is part of the comparison (``where``), and every
  output that prints the ratio beside other times says it;
* **the statistic** is the mean, the statistic of every figure (:data:`reporter.standing.STATISTIC`);
  the ratio is the two runs' means, theirs over mine (above 1: mine is faster);
* **the verdict** is :func:`reporter.analysis.diff.compare_timing` on the two runs' samples:
  Welch's t-test on the means, p below :data:`reporter.analysis.stats.P_THRESHOLD`, and a change of
  at least :data:`reporter.analysis.diff.MIN_EFFECT_PCT` percent. Runs of two sessions are not
  tested (the samples of one session cannot see how the card's state moves between sessions),
  nor runs timed two different ways;
* **the words**: the direction ("faster", "slower") always follows the ratio printed beside it;
  the verdict only qualifies it ("within noise", "not tested"), so a label can never contradict
  its number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..records import PeerResult, Run
from ..standing import KIND_WORDS, Pairing
from .diff import MIN_EFFECT_PCT, Verdict, compare_timing, ratio_words
from .stats import P_THRESHOLD
from .summary import VersionSummary

Tone = Literal["faster", "slower", "same", "untested"]

#: The rule, said once: the steps table's note prints it.
RULE = (f"Two versions are compared on their means, in one session that timed both where there is one; the "
        f"difference counts as a change when Welch's t-test on the two runs' samples gives p < {P_THRESHOLD:g} "
        f"and the means differ by at least {MIN_EFFECT_PCT:g} %. Otherwise the two are the same within noise; "
        "times from two sessions are compared but not tested.")


@dataclass(frozen=True)
class Comparison:
    """``mine`` against ``theirs`` on one case: the two times, the ratio, the verdict."""

    mine: str  # version (or peer) names
    theirs: str
    case: str
    mine_ms: float  # the means compared
    theirs_ms: float
    verdict: Verdict | None  # None: not tested (``untested`` says why)
    untested: str = ""
    pair: Pairing | None = None  # the runs, for two versions; None for a peer timed in the same run
    run_id: str = ""  # a peer's comparison: the run that timed both

    @property
    def speedup(self) -> float:
        """theirs / mine, on the two means (above 1: mine is faster)."""
        return self.theirs_ms / self.mine_ms

    @property
    def ratio(self) -> str:
        """'1.28× faster', '1.02× slower', '1.00×'."""
        return ratio_words(self.speedup)

    @property
    def tone(self) -> Tone:
        """What the test says: 'faster' / 'slower' (a change), 'same' (within noise), 'untested'."""
        if self.verdict is None or self.verdict.p_value is None:  # two sessions, or a side with one sample
            return "untested"
        return self.verdict.verdict

    @property
    def qualifier(self) -> str:
        """'' for a change; 'within noise', 'under 1 %', 'not tested: two sessions' otherwise."""
        if self.verdict is None:
            return f"not tested: {self.untested}"
        if self.verdict.p_value is None:
            return f"not tested: {self.verdict.reason}"
        if self.verdict.verdict != "same":
            return ""
        return f"under {MIN_EFFECT_PCT:g} %" if self.verdict.significant else "within noise"

    @property
    def label(self) -> str:
        """The ratio and its qualifier: '1.28× faster', '1.01× faster, within noise'."""
        return f"{self.ratio}, {self.qualifier}" if self.qualifier else self.ratio

    @property
    def on_figures(self) -> bool:
        """The ratio is that of the two figures, timed in one session (a peer: in one run)."""
        return self.pair is None or (self.pair.figures and self.pair.same_session)

    @property
    def where(self) -> str:
        """Where the two times come from, when not both figures of one session: '' otherwise."""
        p = self.pair
        if p is None or self.on_figures:
            return ""
        if not p.same_session:
            return (f"{'the figures' if p.figures else 'runs'} of two sessions ({session_words(p.theirs.session_id)} "
                    f"and {session_words(p.mine.session_id)})" + (": no session timed both" if p.figures else ""))
        return f"both {KIND_WORDS[p.kind]} in the {session_words(p.mine.session_id)} session"


def session_words(session_id: str) -> str:
    """'22 Nov 19:13' for a session id such as '20261122T191331101Z'."""
    from datetime import datetime

    try:
        return f"{datetime.strptime(session_id[:13], '%Y%m%dT%H%M'):%d %b %H:%M}"
    except ValueError:
        return session_id


def compare_pair(pair: Pairing, mine: str, theirs: str, case: str) -> Comparison:
    """The comparison on a given pair of runs (the verdict when it can be tested)."""
    a, b = pair.theirs.timing, pair.mine.timing
    assert a is not None and b is not None
    base = dict(mine=mine, theirs=theirs, case=case, mine_ms=pair.mine_ms, theirs_ms=pair.theirs_ms, pair=pair)
    if not pair.same_session:
        return Comparison(**base, verdict=None, untested="two sessions")  # type: ignore[arg-type]
    if not a.timed_like(b):
        return Comparison(**base, verdict=None,  # type: ignore[arg-type]
                          untested=f"timed differently ({a.way} against {b.way})")
    return Comparison(**base, verdict=compare_timing(a, b))  # type: ignore[arg-type]


def compare_versions(mine: VersionSummary, theirs: VersionSummary) -> Comparison | None:
    """``mine`` against ``theirs`` on one case, the first benchmark case both run
    (:meth:`VersionSummary.common_case`: the report's case unless a version's CASES_WHERE leaves it out;
    ``Comparison.case`` says which); None when either has no figure there, or when the two share no case:
    no ratio is printed between two cases."""
    case = mine.common_case(theirs)
    pair = mine.against(theirs)
    if case is None or pair is None:
        return None
    return compare_pair(pair, mine.name, theirs.name, case)


def compare_runs(mine: Run, theirs: Run) -> Comparison | None:
    """Two given runs (``report diff`` of named runs): the same words and test; None without times."""
    if mine.timing is None or theirs.timing is None:
        return None
    pair = Pairing(mine, theirs, figures=False)
    return compare_pair(pair, mine.version, theirs.version, mine.case_name)


def compare_peer(run: Run, peer: PeerResult) -> Comparison | None:
    """A version's run against a peer timed in the same run, the same way; None when either has no time."""
    if run.timing is None or peer.timing is None:
        return None
    if not run.timing.timed_like(peer.timing):
        return Comparison(run.version, peer.name, run.case_name, run.timing.mean_ms, peer.timing.mean_ms, None,
                          f"timed differently ({peer.timing.way} against {run.timing.way})", run_id=run.run_id)
    return Comparison(run.version, peer.name, run.case_name, run.timing.mean_ms, peer.timing.mean_ms,
                      compare_timing(peer.timing, run.timing), run_id=run.run_id)
