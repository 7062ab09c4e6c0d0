"""Timing statistics and the stopping rule, on CPU callables with the host clock."""

from __future__ import annotations

import statistics
import time

import pytest

from reporter.harness.timing import HostTimer, StoppingRule, benchmark, quantile, summarize
from reporter.render.text import leaderboard_block


class FakeTimer:
    """Returns scripted durations, so the stopping rule can be tested exactly."""

    method = "fake"

    def __init__(self, durations):
        self.durations = list(durations)
        self.calls = 0

    def time_call(self, fn, before):
        if before:
            before()
        fn()
        self.calls += 1
        return self.durations[min(self.calls - 1, len(self.durations) - 1)]


def test_statistics_match_the_definitions():
    samples = [1.0, 2.0, 3.0, 4.0, 10.0]
    s = summarize(samples, method="x", l2_flush=False, rule=StoppingRule(), stop_reason="max_reps")
    assert s.mean_ms == 4.0 and s.median_ms == 3.0 and s.min_ms == 1.0 and s.max_ms == 10.0
    assert s.std_ms == pytest.approx(statistics.stdev(samples))
    assert s.stderr_ms == pytest.approx(statistics.stdev(samples) / 5 ** 0.5)
    assert s.quantiles_ms["p25"] == 2.0 and s.quantiles_ms["p75"] == 4.0
    assert quantile(sorted(samples), 0.05) == pytest.approx(1.2)


def test_constant_samples_stop_on_stderr_after_min_reps():
    timer = FakeTimer([5.0])
    rule = StoppingRule(min_reps=3, max_reps=100, warmup_reps=2, min_span_s=0)
    s = benchmark(lambda rep: None, timer=timer, rule=rule)
    assert s.n == 3 and s.stop_reason == "stderr"
    assert timer.calls == 3 + 2, "warm-up calls happen and are not recorded"


def test_noisy_samples_run_to_max_reps():
    timer = FakeTimer([1.0, 3.0] * 100)
    s = benchmark(lambda rep: None, timer=timer, rule=StoppingRule(max_reps=20, budget_s=60, warmup_reps=0))
    assert s.n == 20 and s.stop_reason == "max_reps"


def test_budget_stops_a_slow_noisy_callable():
    rule = StoppingRule(max_reps=100, budget_s=0.05, warmup_reps=0, min_span_s=0)
    calls = []

    def slow(rep):
        calls.append(rep)
        time.sleep(0.004 + 0.004 * (rep % 2))

    s = benchmark(slow, timer=HostTimer(), rule=rule)
    assert s.stop_reason == "budget" and 3 <= s.n < 100
    assert s.method == "host-perf-counter"
    assert all(x >= 3.5 for x in s.samples_ms), "host timer measures the call"


def test_the_default_is_the_course_rule_above_a_floor():
    """A 1.45 s call stops on the course's budget (10 s of timed calls) at the floor of 10 calls, not after 100;
    a steady 50 ms call stops on its standard error once its calls span 2 s; a steady 5 ms call gets 100."""
    slow = benchmark(lambda rep: None, timer=FakeTimer([1400.0, 1500.0]), rule=StoppingRule(warmup_reps=0))
    assert slow.n == 10 and slow.stop_reason == "budget"
    assert (slow.budget_of, slow.min_reps, slow.max_reps, slow.wall_s, slow.min_span_s) == ("calls", 10, 100, 120.0, 2.0)
    steady = benchmark(lambda rep: None, timer=FakeTimer([50.0]), rule=StoppingRule(warmup_reps=0))
    assert steady.n == 40 and steady.stop_reason == "stderr"
    short = benchmark(lambda rep: None, timer=FakeTimer([5.0]), rule=StoppingRule(warmup_reps=0))
    assert short.n == 100 and short.stop_reason == "max_reps"


def test_the_rule_is_said_as_the_record_keeps_it():
    """`report show` and the appendix print a run's rule from its record: the floor, the stops, 'exactly N' where
    the floor is the most; a record made before the course's rule had a wall-time budget."""
    from reporter.render.numbers import stopped_by, stopping_rule

    slow = benchmark(lambda rep: None, timer=FakeTimer([1400.0, 1500.0]), rule=StoppingRule(warmup_reps=0))
    assert stopping_rule(slow) == ("10 to 100 calls (at least 2 s of them, unless the 100 come first), stopping "
                                   "earlier once the standard error falls under 0.1 % of the mean, the timed calls "
                                   "add up to 10 s or 120 s have passed")
    assert stopped_by(slow) == "n=10, stopped as its timed calls reached the budget"
    fixed = benchmark(lambda rep: None, timer=FakeTimer([1.0, 3.0]), rule=StoppingRule(min_reps=5, max_reps=5,
                                                                                        warmup_reps=0))
    assert stopping_rule(fixed) == "exactly 5 calls" and stopped_by(fixed) == "n=5, stopped as it reached the most calls"
    old = slow.model_copy(update={"budget_of": None, "min_reps": None, "max_reps": None, "wall_s": None,
                                  "min_span_s": None})
    assert "10 s of wall time" in stopping_rule(old) and stopped_by(old).endswith("its wall-time budget")


def test_the_wall_limit_stops_a_call_whose_host_side_is_slow():
    """Untimed work (a fresh input per call, say) counts against the wall limit, not the budget."""
    rule = StoppingRule(min_reps=3, warmup_reps=0, min_span_s=0, wall_s=0.05)
    s = benchmark(lambda rep: None, timer=FakeTimer([1.0, 3.0]), rule=rule, prepare=lambda rep: time.sleep(0.01))
    assert s.stop_reason == "wall" and 3 <= s.n < 10


def test_prepare_and_after_run_untimed_around_each_call():
    events = []
    timer = FakeTimer([2.0])
    benchmark(lambda rep: events.append(("call", rep)) or rep, timer=timer,
              rule=StoppingRule(min_reps=3, warmup_reps=1),
              prepare=lambda rep: events.append(("prepare", rep)),
              after=lambda rep, out: events.append(("after", rep, out)))
    assert events[:3] == [("prepare", -1), ("call", -1), ("after", -1, -1)]
    assert ("after", 2, 2) in events


def test_rule_rejects_nonsense():
    with pytest.raises(ValueError, match="min_reps"):
        StoppingRule(min_reps=1)
    with pytest.raises(ValueError, match="max_reps"):
        StoppingRule(min_reps=5, max_reps=3)


def test_leaderboard_block_layout():
    s = summarize([13.0, 13.5, 14.0], method="x", l2_flush=True, rule=StoppingRule(), stop_reason="stderr")
    text = leaderboard_block(s, title="flashattn v09", case={"b": 4, "seed": 1118}, device_lines=["GPU: H100"])
    assert "⏱ 13.500 ms ± 288.7 µs" in text
    assert "⚡ 13.000 ms 🐌 14.000 ms" in text
    assert text.splitlines()[1] == "b: 4; seed: 1118"
    assert "Running on:\n* GPU: H100" in text


class WarmingCard:
    """A card that slows down with every call it runs (heating into its power cap): a call's time
    is its kernel's own cost times a factor that grows with the number of calls so far, up to a
    plateau. The callables tell it which kernel ran through ``cost``."""

    method = "fake-warming"

    def __init__(self, growth=0.01, plateau=1.2):
        self.calls, self.growth, self.plateau = 0, growth, plateau
        self.cost = 0.0
        self.order: list[str] = []

    def time_call(self, fn, before):
        fn()
        self.calls += 1
        return self.cost * min(self.plateau, 1 + self.growth * self.calls)

    def kernel(self, name, cost):
        def call(rep):
            self.cost = cost
            if rep >= 0:
                self.order.append(name)
        return call


def test_rotation_puts_every_callable_in_every_position():
    from reporter.harness.timing import rotation

    orders = [rotation(3, r) for r in range(3)]
    assert orders == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    for pos in range(3):
        assert sorted(o[pos] for o in orders) == [0, 1, 2]
    assert rotation(1, 5) == [0] and rotation(0, 2) == []


def test_a_warming_card_favours_the_first_configuration_timed_one_after_another():
    """What the flashattn v14 sweeps showed on the H100, reproduced with a scripted card: two
    identical kernels, timed one after the other, come out several percent apart."""
    card = WarmingCard()
    rule = StoppingRule(min_reps=3, max_reps=20, target_rel_stderr=1e-9, budget_s=60, warmup_reps=1)
    first = benchmark(card.kernel("a", 1.0), timer=card, rule=rule)
    second = benchmark(card.kernel("b", 1.0), timer=card, rule=rule)
    assert second.median_ms > first.median_ms * 1.05


def test_interleaved_rounds_time_identical_kernels_alike_and_rank_real_differences():
    from reporter.harness.timing import benchmark_interleaved

    card = WarmingCard()
    rule = StoppingRule(min_reps=3, max_reps=30, target_rel_stderr=1e-9, budget_s=60, warmup_reps=1)
    a, b, c = benchmark_interleaved([card.kernel("a", 1.0), card.kernel("b", 1.0), card.kernel("c", 0.98)],
                                    timer=card, rule=rule).stats
    assert a.n == b.n == c.n == 30 and a.stop_reason == "max_reps" and a.interleaved and a.way.endswith("interleaved")
    assert abs(a.median_ms / b.median_ms - 1) < 0.01  # identical kernels: within 1 %, not 5 %+
    assert c.median_ms < min(a.median_ms, b.median_ms)  # a real 2 % difference still ranks
    assert card.order[:6] == ["a", "b", "c", "b", "c", "a"]  # rotating rounds


def test_interleaved_rounds_stop_only_when_every_callable_meets_the_rule():
    from reporter.harness.timing import benchmark_interleaved

    steady = FakeTimer([1.0] * 100)
    rule = StoppingRule(min_reps=3, max_reps=50, target_rel_stderr=1e-3, budget_s=60, warmup_reps=0, min_span_s=0)
    out = benchmark_interleaved([lambda rep: None, lambda rep: None], timer=steady, rule=rule).stats
    assert [s.n for s in out] == [3, 3] and all(s.stop_reason == "stderr" for s in out)
    noisy = FakeTimer([1.0, 1.0, 2.0, 1.0] * 50)  # the second callable gets every 2.0: it never settles
    out = benchmark_interleaved([lambda rep: None, lambda rep: None], timer=noisy, rule=rule).stats
    assert [s.n for s in out] == [50, 50] and out[1].stop_reason == "max_reps"
    assert benchmark_interleaved([], timer=steady, rule=rule).stats == []


def test_interleaved_rounds_share_one_prepared_input_and_drop_a_callable_whose_check_fails():
    """Ranked, every callable of a round gets the round's fresh input; a failed re-check takes
    that callable out with its error, and the others finish."""
    from reporter.harness.timing import benchmark_interleaved

    seen: list[tuple[int, int, int]] = []
    current = {"input": None}

    def prepare_round(rep):
        current["input"] = 1000 + rep

    def make(i):
        return lambda rep: (i, rep, current["input"])

    def after(i, rep, out):
        seen.append(out)
        if i == 1 and rep == 2:
            raise ValueError("re-check failed at seed 42")

    rule = StoppingRule(min_reps=3, max_reps=6, target_rel_stderr=1e-9, budget_s=60, warmup_reps=1)
    res = benchmark_interleaved([make(0), make(1), make(2)], timer=FakeTimer([1.0, 2.0] * 50), rule=rule,
                                prepare_round=prepare_round, after=after, ranked=True)
    assert all(inp == 1000 + rep for _, rep, inp in seen)  # the round's input, never another's
    assert isinstance(res.errors[1], ValueError) and res.stats[1] is None
    assert res.errors[0] is None and res.stats[0].n == 6 and res.stats[0].ranked
    assert res.stats[2].n == 6
    assert not any(i == 1 and rep > 2 for i, rep, _ in seen)


def test_the_cyclic_collector_stays_out_of_the_timed_rounds():
    """A collection inside a host-heavy call's window lengthens the sample: the rounds run with
    Python's collector off, and it is back on afterwards (or stays off if it was off)."""
    import gc

    seen: list[bool] = []

    def call(rep):
        seen.append(gc.isenabled())
        return rep

    assert gc.isenabled()
    benchmark(call, timer=HostTimer(), rule=StoppingRule(min_reps=3, max_reps=5, warmup_reps=1))
    assert seen and not any(seen) and gc.isenabled()
    gc.disable()
    try:
        benchmark(call, timer=HostTimer(), rule=StoppingRule(min_reps=3, max_reps=3, warmup_reps=0))
        assert not gc.isenabled()
    finally:
        gc.enable()
