"""The stream hold, the host's queuing time and the per-sample GPU state, on the CPU with fakes;
on a GPU (marker ``gpu``) the hold is shown to take a host delay out of a sample."""

from __future__ import annotations

import time

import pytest

from reporter.harness.gpu_state import reason_names
from reporter.harness.timing import HoldTimedOut, StoppingRule, benchmark
from reporter.records import TimingStats

RULE = StoppingRule(min_reps=5, max_reps=5, target_rel_stderr=1e-9, budget_s=60, warmup_reps=2)


class EnqueueTimer:
    """Reports a fixed duration and a scripted host queuing time per call."""

    method = "fake"

    def __init__(self) -> None:
        self.calls = 0
        self.last_enqueue_ms = 0.0

    def time_call(self, fn, before):
        if before:
            before()
        fn()
        self.calls += 1
        self.last_enqueue_ms = float(self.calls)
        return 1.0


def test_enqueue_times_and_states_are_kept_per_timed_sample_only():
    timer = EnqueueTimer()
    states = iter(range(100))

    def state():
        i = next(states)
        return {"sm_clock_mhz": 1980.0 - i, "mem_clock_mhz": 2619.0, "temp_c": 40.0 + i, "power_w": 300.0,
                "reasons": float(0x4 if i == 1 else 0)}

    t = benchmark(lambda rep: rep, timer=timer, rule=RULE, state=state)
    assert t.n == 5
    # two warm-up calls came first: their queuing times (1, 2) are not kept
    assert t.enqueue_ms == [3.0, 4.0, 5.0, 6.0, 7.0]
    assert t.gpu_state is not None
    assert t.gpu_state.sm_clock_mhz == [1980.0, 1979.0, 1978.0, 1977.0, 1976.0]
    assert t.gpu_state.clock_event_reasons[1] == ["sw_power_cap"]
    assert t.gpu_state.reasons_seen() == {"sw_power_cap": 1}
    again = TimingStats.model_validate_json(t.model_dump_json())
    assert again == t


def test_records_without_the_new_fields_still_load():
    t = benchmark(lambda rep: rep, timer=EnqueueTimer(), rule=RULE)
    data = t.model_dump()
    data.pop("enqueue_ms")
    data.pop("gpu_state")
    old = TimingStats.model_validate(data)
    assert old.enqueue_ms is None and old.gpu_state is None


class FlakyHoldTimer:
    """Like HeldCudaEventTimer: the first held call times out, then it times plain."""

    def __init__(self, fail_at: int) -> None:
        self.fail_at = fail_at
        self.calls = 0
        self.fallback_reason: str | None = None

    def begin(self) -> None:
        self.fallback_reason = None
        self.calls = 0

    @property
    def method(self) -> str:
        return "cuda-events" if self.fallback_reason else "cuda-events+hold"

    def time_call(self, fn, before):
        self.calls += 1
        fn()
        if self.calls == self.fail_at and not self.fallback_reason:
            self.fallback_reason = "timed out"
            raise HoldTimedOut("timed out")
        return 2.0


def test_a_hold_that_times_out_in_warm_up_falls_back_to_plain_for_the_whole_run():
    timer = FlakyHoldTimer(fail_at=1)
    t = benchmark(lambda rep: rep, timer=timer, rule=RULE)
    assert t.method == "cuda-events"
    assert t.n == 5
    # the next callable timed with the same timer (a version after a peer that synchronises) is held again
    timer.fail_at = 0
    assert benchmark(lambda rep: rep, timer=timer, rule=RULE).method == "cuda-events+hold"


def test_a_hold_that_times_out_while_timing_voids_the_run():
    timer = FlakyHoldTimer(fail_at=4)
    with pytest.raises(HoldTimedOut):
        benchmark(lambda rep: rep, timer=timer, rule=RULE)


def test_clock_event_reason_names_come_from_pynvml_constants():
    pynvml = pytest.importorskip("pynvml")
    assert reason_names(0) == []
    mask = pynvml.nvmlClocksEventReasonSwPowerCap | pynvml.nvmlClocksEventReasonHwThermalSlowdown
    assert reason_names(mask) == ["sw_power_cap", "hw_thermal_slowdown"]
    # the name records have always kept, although NVML calls it DisplayClockSetting
    assert reason_names(pynvml.nvmlClocksEventReasonDisplayClockSetting) == ["display_clocks_setting"]
    assert reason_names(1 << 40) == ["0x10000000000"]  # a bit NVML has no name for


def test_without_pynvml_no_bit_has_a_name(monkeypatch):
    import sys

    from reporter.harness.gpu_state import clock_event_reasons

    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    clock_event_reasons.cache_clear()
    try:
        assert reason_names(0x44) == ["0x44"]
    finally:
        monkeypatch.undo()
        clock_event_reasons.cache_clear()


@pytest.mark.gpu
def test_hold_takes_a_host_delay_out_of_the_sample_and_never_deadlocks():
    torch = pytest.importorskip("torch")
    pytest.importorskip("cupy")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from reporter.harness.timing import CudaEventTimer, HeldCudaEventTimer

    x = torch.empty(1 << 20, device="cuda")

    def late_launch():  # 20 ms of host time before a tiny kernel is queued
        time.sleep(0.02)
        x.fill_(1.0)

    plain, held = CudaEventTimer(), HeldCudaEventTimer()
    for _ in range(2):
        plain.time_call(late_launch, None), held.time_call(late_launch, None)
    plain_ms = plain.time_call(late_launch, None)
    held_ms = held.time_call(late_launch, None)
    assert plain_ms > 15.0, plain_ms           # the GPU waited for the host inside the window
    assert held_ms < 1.0, held_ms              # it did not, with the hold
    assert held.last_enqueue_ms > 15.0         # and the host's queuing time is still known
    assert held.method == "cuda-events+hold"

    def syncs():  # waits for the GPU from the host: the hold must time out, not deadlock
        x.fill_(2.0)
        torch.cuda.synchronize()

    sync_timer = HeldCudaEventTimer(timeout_s=0.2)
    t = benchmark(lambda rep: syncs(), timer=sync_timer, rule=RULE)
    assert t.method == "cuda-events" and sync_timer.fallback_reason


# --------------------------------------------------------------------------- peers are timed like the versions


class _Spec:
    TOLERANCE = None

    def __init__(self, peers):
        self.PEERS = peers

    @staticmethod
    def work_model(**case):
        from reporter.records import WorkModel

        return WorkModel(flops=1.0, bytes=1.0, ceiling="copy")


class _Peer:
    description = "fake peer"

    @staticmethod
    def fn(data):
        return data


class _Progress:
    def add_task(self, *a, **k):
        return 0

    def update(self, *a, **k):
        pass


@pytest.mark.parametrize("ranked,hold", [(True, False), (False, False), (True, True)])
def test_peers_are_timed_the_way_the_versions_are(monkeypatch, ranked, hold):
    from types import SimpleNamespace

    from reporter.harness import worker
    from reporter.harness.jobs import RunOptions
    from reporter.records import CheckResult

    seen = []
    ok = CheckResult(passed=True, exact=False, n_elements=1, mismatches=0)
    monkeypatch.setattr(worker, "check_once", lambda *a, **k: (ok, None))
    monkeypatch.setattr(worker, "free_memory", lambda: None)

    def fake_time(fn, data, *, opts, **kw):
        seen.append(opts)
        return benchmark(lambda rep: rep, timer=EnqueueTimer(), rule=RULE, ranked=opts.ranked)

    monkeypatch.setattr(worker, "time_callable", fake_time)
    a = SimpleNamespace(name="fake", spec=_Spec({"p": _Peer()}))
    opts = RunOptions(ranked=ranked, rule=RULE, hold=hold)
    (peer,) = worker._time_peers(a, {"seed": 1}, None, None, opts, None, None, None, _Progress(), None)
    assert [(o.ranked, o.hold) for o in seen] == [(ranked, hold)]
    assert peer.timing is not None and peer.timing.ranked is ranked and peer.error is None


def test_a_peer_failing_a_ranked_recheck_is_recorded_not_raised(monkeypatch):
    from types import SimpleNamespace

    from reporter.harness import worker
    from reporter.harness.jobs import RunOptions
    from reporter.records import CheckResult

    ok = CheckResult(passed=True, exact=False, n_elements=1, mismatches=0)
    bad = CheckResult(passed=False, exact=False, n_elements=1, mismatches=1, seed=14, message="1 mismatch")
    monkeypatch.setattr(worker, "check_once", lambda *a, **k: (ok, None))
    monkeypatch.setattr(worker, "free_memory", lambda: None)

    def failing(*a, **k):
        raise worker.RankedCheckFailed(bad)

    monkeypatch.setattr(worker, "time_callable", failing)
    a = SimpleNamespace(name="fake", spec=_Spec({"p": _Peer()}))
    opts = RunOptions(ranked=True, rule=RULE)
    (peer,) = worker._time_peers(a, {"seed": 1}, None, None, opts, None, None, None, _Progress(), None)
    assert peer.timing is None and peer.check == bad and "seed 14" in peer.error


def test_only_timings_taken_the_same_way_are_compared():
    plain = benchmark(lambda rep: rep, timer=EnqueueTimer(), rule=RULE)
    ranked = plain.model_copy(update={"ranked": True})
    held = plain.model_copy(update={"method": "cuda-events+hold"})
    assert plain.timed_like(plain.model_copy()) and not plain.timed_like(None)
    assert not plain.timed_like(ranked) and not plain.timed_like(held)
    assert ranked.way == "fake, ranked" and plain.way == "fake"
    # the one comparison (reporter.analysis.compare) tests only runs timed the same way
    from conftest import LOGS
    from reporter import store
    from reporter.analysis.compare import compare_pair
    from reporter.standing import Pairing

    base = next(r for r in store.runs(LOGS, "histogram", "v07_lean_launch") if r.timing is not None)

    def pair(a, b):
        return Pairing(base.model_copy(update={"timing": b}), base.model_copy(update={"timing": a}), figures=True)

    c = compare_pair(pair(plain, ranked), "v07", "v07", "benchmark")
    assert c.verdict is None and c.untested == "timed differently (fake against fake, ranked)"
    assert c.label.endswith("not tested: timed differently (fake against fake, ranked)")
    c = compare_pair(pair(plain, held), "v07", "v07", "benchmark")
    assert c.verdict is None and c.untested == "timed differently (fake against cuda-events+hold)"
    c = compare_pair(pair(plain, plain.model_copy()), "v07", "v07", "benchmark")
    assert c.verdict is not None and c.tone == "same"
