"""A sweep names its tie: every configuration the diff's test cannot tell apart from the fastest."""

from __future__ import annotations

import random

from conftest import LOGS
from reporter import store
from reporter.analysis.diff import compare_timing
from reporter.analysis.sweep import decision, note, standings, tied_with_fastest

SWEEPS = store.sweeps(LOGS, "flashattn")


def _scripted(medians: dict[str, float], spread: float, n: int = 30):
    """A real sweep record with its points' samples replaced: ``n`` samples around each median."""
    sw = next(s for s in SWEEPS if len([p for p in s.points if p.timing]) >= 3).model_copy(deep=True)
    rng = random.Random(7)
    points = []
    for i, (name, med) in enumerate(medians.items()):
        p = sw.points[i % len(sw.points)].model_copy(deep=True)
        p.config = {"CFG": name}
        samples = [med * (1 + rng.uniform(-spread, spread)) for _ in range(n)]
        p.timing = p.timing.model_copy(update={"samples_ms": samples, "median_ms": sorted(samples)[n // 2],
                                               "mean_ms": sum(samples) / n, "n": n})
        p.error = None
        points.append(p)
    sw.points = points
    return sw


def test_a_measurably_faster_configuration_stands_alone():
    sw = _scripted({"a": 10.0, "b": 11.0, "c": 12.0}, spread=0.01)
    assert [p.config["CFG"] for p in tied_with_fastest(sw)] == ["a"]
    assert decision(sw) == "CFG=a has the lowest mean, measurably ahead of the other 2"
    notes = {s.point.config["CFG"]: note(s) for s in standings(sw)}
    assert notes["a"] == "fastest" and notes["b"].startswith("1.10× slower")


def test_configurations_within_noise_are_named_as_tied():
    sw = _scripted({"a": 10.0, "b": 10.02, "c": 13.0}, spread=0.05)
    assert [p.config["CFG"] for p in tied_with_fastest(sw)][0] in ("a", "b")
    assert {p.config["CFG"] for p in tied_with_fastest(sw)} == {"a", "b"}
    assert "cannot be told apart from it: the sweep does not decide between them" in decision(sw)


def test_ties_use_the_diff_test_on_the_committed_sweeps():
    for sw in SWEEPS:
        best = sw.best()
        for s in standings(sw):
            if s.fastest or s.verdict is None:
                continue
            assert s.verdict == compare_timing(best.timing, s.point.timing)
            assert s.tied == (s.verdict.verdict == "same")
    # the v14 sweep recorded with interleaving could not separate stage counts or the cluster
    v14 = [s for s in SWEEPS if s.version == "v14_multicast" and s.timing_order == "interleaved"][-1]
    assert len(tied_with_fastest(v14)) == 3
