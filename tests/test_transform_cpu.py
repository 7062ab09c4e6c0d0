"""transform's assignment on the CPU: the float64 reference against a plain-Python reading of the
problem, the sum's definition, the check's tolerances, the harness's repeat check of the sum, and
tuple outputs in the elementwise compare."""

from __future__ import annotations

import math
import sys

import pytest
import torch
from conftest import ROOT

sys.path.insert(0, str(ROOT / "kernels" / "transform"))
import assignment as T  # noqa: E402

F = (math.sin, math.cos, math.log, math.exp)


def _plain(x: torch.Tensor) -> tuple[list[float], float]:
    """The problem statement, element by element, in Python floats."""
    xs = x.double().tolist()
    y = [F[i % 4](xs[i]) if i % 32 < 16 else F[i % 4](xs[i - 16]) * F[i % 4](xs[i]) for i in range(len(xs))]
    return y, sum(y[i] for i in range(0, len(y), 4) if i + 1 < len(y) and y[i + 1] > 0.5)


@pytest.mark.parametrize("n", [1, 2, 5, 16, 17, 20, 31, 32, 33, 4097, 100_003])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_reference_is_the_problem_statement(n, dtype):
    x = T.generate_input(n, dtype, T.SEED, device="cpu")
    assert x.dtype == T._dtype(dtype) and bool((x > 0).all()) and bool((x <= 5).all())
    y, s = T.ref_kernel(x)
    want_y, want_s = _plain(x)
    assert y.dtype == torch.float64 and torch.allclose(y, torch.tensor(want_y, dtype=torch.float64), rtol=1e-12, atol=0)
    assert math.isclose(float(s), want_s, rel_tol=1e-12, abs_tol=1e-12)


def test_inputs_are_seeded_and_never_zero():
    a = T.generate_input(1 << 16, "float32", 7, device="cpu")
    assert torch.equal(a, T.generate_input(1 << 16, "float32", 7, device="cpu"))
    assert not torch.equal(a, T.generate_input(1 << 16, "float32", 8, device="cpu"))
    # a draw of exactly 0 becomes the smallest positive normal (its log is finite)
    g = torch.Generator().manual_seed(0)
    assert float(torch.where(torch.zeros(1) > 0, torch.zeros(1), torch.tensor(torch.finfo(torch.float32).tiny))) > 0
    del g


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_eager_peer_passes_and_wrong_outputs_fail(dtype):
    x = T.generate_input(100_003, dtype, T.SEED, device="cpu")
    y, s = T._eager(x)
    ok, msg = T.check_implementation(x, (y, s))
    assert ok, msg
    bad_y = y.clone()
    bad_y[12345] += 0.05 * (1 + bad_y[12345].abs())
    ok, msg = T.check_implementation(x, (bad_y, s))
    assert not ok and "first at 12345" in msg
    ok, msg = T.check_implementation(x, (y, s + 1.0))
    assert not ok and msg.startswith("sum")
    assert not T.check_implementation(x, (y[:-1], s))[0]
    assert not T.check_implementation(x, y)[0]
    assert not T.check_implementation(x, (y, s.to(torch.float16)))[0]


def test_a_running_fp32_sum_misses_the_accumulation_bound():
    """A plain fp32 running sum of the benchmark's 33.5 M terms errs far beyond the 4e-6 the check
    allows for accumulation; a pairwise one does not (numbers scaled: 4 M terms here)."""
    terms = torch.rand(1 << 22, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    exact = float(terms.sum())
    import numpy as np

    running = np.cumsum(terms.numpy().astype(np.float32), dtype=np.float32)[-1]  # one fp32 add after another
    pairwise = terms.float().sum()  # torch's CPU sum adds in blocks
    bound = T.SUM_ACCUMULATION * exact
    assert abs(float(running) - exact) > bound
    assert abs(float(pairwise) - exact) <= bound


def test_repeat_check_keeps_every_sum_and_fails_when_they_differ():
    from reporter.harness import worker

    x = T.generate_input(4097, "float32", T.SEED, device="cpu")
    ref = T.ref_kernel(x)
    calls = {"n": 0}

    def steady(data):
        return T._eager(data)

    def drifting(data):
        calls["n"] += 1
        y, s = T._eager(data)
        return y, s + (calls["n"] % 3) * 1e-12  # a different last bit now and then, as float atomics give

    res, _ = worker.check_once(steady, x, ref, T, T.SEED, ("transform", "steady"))
    assert res.passed and len(res.repeats) == T.REPEATS and len(set(res.repeats)) == 1
    res, _ = worker.check_once(drifting, x, ref, T, T.SEED, ("transform", "drifting"))
    assert not res.passed and "not the same from call to call: 3 distinct values in 20 calls" in res.message


def test_compare_takes_tuple_outputs_part_by_part():
    from reporter.assignments import Tolerance
    from reporter.compare import compare

    ref = (torch.ones(8), torch.tensor(2.0))
    tol = (Tolerance(rtol=0.0, atol=0.1), None)
    assert compare((torch.ones(8), torch.tensor(9.0)), ref, tol).passed  # part 1 left to the assignment
    res = compare((torch.ones(8) * 1.5, torch.tensor(2.0)), ref, tol)
    assert not res.passed and res.message.startswith("output[0]: 8 of 8 elements outside tolerance")
    res = compare(torch.ones(8), ref, tol)
    assert not res.passed and not res.shape_ok and "expected a tuple of 2 tensors" in res.message
    res = compare((torch.ones(8), torch.tensor(float("nan"))), ref, tol)
    assert not res.passed and "NaN" in res.message


def test_work_model_counts_one_read_and_one_write():
    w = T.work_model(**T.CASES["benchmark"])
    assert w.bytes == 2 * T.N_BENCHMARK * 4 and w.flops == 0 and w.ceiling == "copy"
    assert "2.5·n·4" in w.description
    assert T.work_model(**T.CASES["benchmark_bf16"]).bytes == 2 * T.N_BENCHMARK * 2


def test_v13_refuses_an_array_its_sum_word_has_no_room_for(monkeypatch):
    """v13's packed sum (transform_sum.cuh) holds a little under 2^28 elements at 4 blocks per SM;
    a larger array is refused on the host, naming n, before anything is launched."""
    import transform_launch
    import v13_one_atomic as v13

    sms = 132  # the H100's, so the grids are the benchmark's
    monkeypatch.setattr(transform_launch, "blocks_for",
                        lambda n, itemsize, cfg, device: max(1, min(n // (cfg["TILE_BYTES"] // itemsize),
                                                                    sms * cfg["BLOCKS_PER_SM"])))
    v13._fits.cache_clear()
    cfg = v13.CONFIG
    for n, itemsize in ((T.N_BENCHMARK, 4), (T.N_BENCHMARK, 2), (T.N_PROBLEM, 4), (20, 2)):
        v13._fits(n, itemsize, cfg["TILE_BYTES"], cfg["BLOCKS_PER_SM"], 0)  # the assignment's cases fit
    with pytest.raises(ValueError, match=f"no room for n = {1 << 28}"):
        v13._fits(1 << 28, 4, cfg["TILE_BYTES"], cfg["BLOCKS_PER_SM"], 0)
    v13._fits.cache_clear()


def test_v15_refuses_an_array_its_sum_word_has_no_room_for():
    """v15's word (finish_counted) holds the sum of a little under 2^29 elements, however the tiles
    fall among the blocks; the assignment's cases fit and 2^29 is refused, naming n."""
    import v15_in_order as v15

    for n in (T.N_BENCHMARK, T.N_PROBLEM, 20):
        v15._fits(n)
    with pytest.raises(ValueError, match=f"no room for n = {1 << 29}"):
        v15._fits(1 << 29)


def test_v16_runs_v15s_rings_and_names_the_one_a_case_runs():
    """v16 keeps v15's kernel and rings; ``config_for`` names the dtype's ring in the three keys a
    sweep point has, and a sweep point (three keys) is one ring for both dtypes."""
    import v15_in_order as v15
    import v16_lean_call as v16

    from reporter.harness.jobs import config_of

    assert v16.SOURCE == v15.SOURCE and v16.CONFIG == v15.CONFIG
    fp32, bf16 = config_of(v16, T.CASES["benchmark"]), config_of(v16, T.CASES["benchmark_bf16"])
    assert fp32 == {k: v15.CONFIG[k] for k in v16.KEYS}
    assert bf16 == {k: v15.CONFIG["BF16_" + k] for k in v16.KEYS} and bf16 != fp32
    assert fp32 in v16.SWEEP and bf16 in v16.SWEEP  # the sweep can confirm or refute both rings
    point = v16.SWEEP[0]
    assert v16.ring(point, True) == v16.ring(point, False) == point


def test_v16_refuses_cpu_tensors_and_arrays_its_word_cannot_sum():
    import v16_lean_call as v16

    with pytest.raises(ValueError, match="CUDA tensor"):
        v16.custom_kernel(torch.ones(64))
    with pytest.raises(ValueError, match="CUDA tensor"):  # a refusal is not kept as the shape's call
        v16.custom_kernel(torch.ones(64))


def test_config_of_prefers_config_for_and_says_when_it_is_not_a_dict():
    from types import SimpleNamespace

    from reporter.harness.jobs import config_of

    assert config_of(None, {}) is None
    assert config_of(SimpleNamespace(CONFIG={"A": 1}), {"dtype": "float32"}) == {"A": 1}
    both = SimpleNamespace(CONFIG={"A": 1, "BF16_A": 2}, config_for=lambda case: {"A": 2 if case["dtype"] == "bfloat16" else 1})
    assert config_of(both, {"dtype": "bfloat16"}) == {"A": 2}
    with pytest.raises(TypeError, match="config_for"):
        config_of(SimpleNamespace(config_for=lambda case: [1]), {})


def test_v17_runs_the_ring_v16s_recorded_sweeps_chose_in_both_dtypes():
    """v17's one ring is what v16's committed sweeps chose on the benchmark in each dtype."""
    import v16_lean_call as v16
    import v17_swept_ring as v17

    from reporter import store
    from reporter.harness.jobs import config_of
    from reporter.records import Sweep

    sweeps = sorted((ROOT / "logs" / "transform" / "v16_lean_call" / "sweeps").glob("*_h100_*.json.gz"))
    chosen = {}
    for path in sweeps:
        s = store.load(path)
        assert isinstance(s, Sweep)
        chosen[s.case_name] = s.chosen
    assert set(chosen) == {"benchmark", "benchmark_bf16"}
    assert chosen["benchmark"] == chosen["benchmark_bf16"] == v17.CONFIG
    assert config_of(v17, T.CASES["benchmark_bf16"]) == config_of(v17, T.CASES["benchmark"]) == v17.CONFIG
    assert v17.SOURCE == v16.SOURCE and v17.CONFIG in v17.SWEEP
