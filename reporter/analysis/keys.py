"""What a printed number stands for: the keys of the report's consistency check (reporter.render.ledger).

Every place that prints a figure, a run's time, a ratio or a verdict, and every worklog binding that
gives one (reporter.analysis.facts), names it with one of these, so two printings of one thing always
carry the same key. ``:`` separates the parts: a key may sit inside a markdown table, where ``|`` would
split the cell.
"""

from __future__ import annotations


def fig(version: str, case: str) -> str:
    """A version's figure on a case (reporter.standing)."""
    return f"fig:{version}:{case}"


def run(run_id: str) -> str:
    """The mean of one run, quoted where it is not a figure."""
    return f"run:{run_id}"


def peer(run_id: str, name: str) -> str:
    """A peer's mean in one run."""
    return f"peer:{run_id}:{name}"


def cmp(mine: str, theirs: str, case: str) -> str:
    """One version (or peer) against another: the ratio with its direction."""
    return f"cmp:{mine}:{theirs}:{case}"


def tone(mine: str, theirs: str, case: str) -> str:
    """The verdict's word on that comparison."""
    return f"tone:{mine}:{theirs}:{case}"


def course(version: str, case: str) -> str:
    """A version's mean under the course's own harness (its full-window runs)."""
    return f"course:{version}:{case}"


def xc(check_id: str, name: str, case: str, timer: str) -> str:
    """What one timer of a cross-check measured for a callable on a case: ``timer`` is 'course' (the course
    harness's mean over its full-window runs) or 'do_bench' (do_bench's median)."""
    return f"xc:{check_id}:{name}:{case}:{timer}"


def xc_ratio(check_id: str, name: str, peer: str, case: str, timer: str) -> str:
    """How many times faster a callable ran than a peer by one timer of a cross-check."""
    return f"xcratio:{check_id}:{name}:{peer}:{case}:{timer}"
