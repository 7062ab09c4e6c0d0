"""The one rule for which run stands for a version and what its figure is (reporter.standing),
on scripted runs and on the committed logs."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from conftest import LOGS
from reporter import store
from reporter.records import REST_MIN_S
from reporter.standing import KINDS, figure, kind_of, pairing, standing_run, standing_runs

BASE = next(r for r in store.runs(LOGS, "flashattn", "v15_kv176_multicast") if r.timing and r.case_name == "benchmark")


def _run(minute: int, *, median: float = 10.0, rest: float = 0.0, interleaved: bool = False, ranked: bool = False,
         held: bool = False, failed: bool = False, gpu: str = "h100", version: str = "v15_kv176_multicast"):
    r = BASE.model_copy(deep=True)
    r.version = version
    r.run_id = f"run{minute:03d}"
    r.created_utc = datetime(2026, 11, 22, tzinfo=timezone.utc) + timedelta(minutes=minute)
    r.device = r.device.model_copy(update={"slug": gpu})
    if failed:
        r.timing = None
        r.check = r.check.model_copy(update={"passed": False})
        return r
    r.timing = r.timing.model_copy(update={
        "median_ms": median, "mean_ms": median, "rest_s": rest, "interleaved": interleaved, "ranked": ranked,
        "method": "cuda-events+hold" if held else "cuda-events"})
    return r


def test_kinds_in_order_of_preference():
    assert KINDS == ("rested", "alone", "interleaved", "held", "ranked")
    assert kind_of(_run(0, rest=REST_MIN_S).timing) == "rested"
    assert kind_of(_run(0, rest=REST_MIN_S / 2).timing) == "alone"
    assert kind_of(_run(0, rest=5, interleaved=True).timing) == "interleaved"
    assert kind_of(_run(0, rest=5, held=True).timing) == "held"
    assert kind_of(_run(0, rest=5, ranked=True, held=True).timing) == "ranked"


def test_a_rested_run_stands_before_newer_runs_of_other_kinds():
    runs = [_run(0, median=13.9), _run(1, median=13.7, rest=5), _run(2, median=12.7, interleaved=True, rest=5),
            _run(3, median=12.6, ranked=True), _run(4, median=12.2, held=True)]
    chosen = standing_run(runs, "v15_kv176_multicast", "benchmark")
    assert chosen.run_id == "run001"
    f = figure(chosen)
    assert (f.ms, f.kind) == (13.7, "rested")
    assert f.how.startswith(f"mean of {chosen.timing.n} calls timed alone from a rested card (5 s idle")


def test_newest_of_the_best_kind_and_fallbacks():
    runs = [_run(0, median=14.0), _run(5, median=13.8), _run(9, median=12.7, interleaved=True)]
    assert standing_run(runs, "v15_kv176_multicast", "benchmark").run_id == "run005"  # alone beats interleaved
    assert standing_run(runs[2:], "v15_kv176_multicast", "benchmark").run_id == "run009"  # the only kind there is


def test_a_newest_failed_run_stands_an_older_one_does_not():
    ok = _run(1, rest=5)
    assert standing_run([ok, _run(2, failed=True)], "v15_kv176_multicast", "benchmark").timing is None
    assert standing_run([_run(0, failed=True), ok], "v15_kv176_multicast", "benchmark") is ok
    assert figure(_run(2, failed=True)) is None


def test_gpus_never_mix():
    runs = [_run(0, rest=5, gpu="h100"), _run(1, rest=5, gpu="h200")]
    assert standing_runs(runs, gpu="h100")[("v15_kv176_multicast", "benchmark")].run_id == "run000"
    assert standing_runs(runs, gpu="h200")[("v15_kv176_multicast", "benchmark")].run_id == "run001"


def test_committed_logs_follow_the_rule():
    """On the real records: per version and case, no timed run of a better kind, and none newer
    of the same kind, than the one that stands."""
    runs = store.runs(LOGS, "flashattn")
    chosen = standing_runs(runs, gpu="h100")
    assert chosen
    for (version, case), r in chosen.items():
        same = [x for x in runs if x.version == version and x.case_name == case and x.device.slug == "h100"]
        if r.timing is None:
            assert r.created_utc == max(x.created_utc for x in same)
            continue
        rank = KINDS.index(kind_of(r.timing))
        for x in same:
            if x.timing is not None:
                assert KINDS.index(kind_of(x.timing)) >= rank, (version, case, x.run_id)
                if kind_of(x.timing) == kind_of(r.timing):
                    assert x.created_utc <= r.created_utc


def _in(session: str, run):
    run.session_id = session
    return run


def test_pairing_takes_the_figures_when_one_session_timed_both():
    a = [_in("s1", _run(0, median=9.0, rest=5, version="vA")), _in("s2", _run(10, median=8.0, rest=5, version="vA"))]
    b = [_in("s2", _run(11, median=10.0, rest=5, version="vB"))]
    p = pairing(a, b, "benchmark")
    assert p.figures and p.same_session and p.mine.run_id == "run010" and p.speedup == 10.0 / 8.0


def test_pairing_finds_a_session_that_timed_both_when_the_figures_differ():
    a = [_in("s1", _run(0, median=9.0, rest=5, version="vA")),       # rested, with vB
         _in("s3", _run(30, median=7.0, rest=5, version="vA")),      # vA's figure, alone in its session
         _in("s4", _run(40, median=9.5, interleaved=True, rest=5, version="vA"))]  # newer, interleaved with vB
    b = [_in("s1", _run(1, median=10.0, rest=5, version="vB")),
         _in("s2", _run(20, median=11.0, rest=5, version="vB")),     # vB's figure
         _in("s4", _run(41, median=10.0, interleaved=True, rest=5, version="vB"))]
    p = pairing(a, b, "benchmark")
    assert not p.figures and p.same_session and p.mine.session_id == "s1"  # rested before interleaved
    assert p.speedup == 10.0 / 9.0
    p = pairing([r for r in a if r.session_id != "s1"], b, "benchmark")
    assert p.mine.session_id == "s4" and p.kind == "interleaved"
    # runs of one session timed different ways never pair
    p = pairing([_in("s5", _run(50, median=7.0, rest=5, version="vA")), _in("s6", _run(60, rest=0, version="vA"))],
                [_in("s6", _run(61, rest=5, version="vB"))], "benchmark")
    assert p.figures and not p.same_session


def test_pairing_without_a_common_session_says_so_and_ignores_other_gpus():
    a = [_in("s1", _run(0, median=9.0, rest=5, version="vA")), _in("s2", _run(5, rest=5, version="vA", gpu="h200"))]
    b = [_in("s2", _run(6, rest=5, version="vB")), _in("s3", _run(7, median=12.0, rest=5, version="vB"))]
    p = pairing(a, b, "benchmark", gpu="h100")
    assert p.figures and not p.same_session and p.speedup == 12.0 / 9.0
    assert pairing(a, [_in("s3", _run(7, failed=True, version="vB"))], "benchmark") is None
