"""qkv's assignment on the CPU: the reference and the seeded inputs, the tolerance (a product summed in
another order passes, one term left out fails), the work model and its roof, the host's refusal of
inputs the kernels cannot read, how the split version's warps cover the work items (walked in Python,
lane by lane), and every version's configurations built by the offline NVRTC without a spill."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch
from conftest import ROOT

import cuda_build  # tests/cuda_build.py

from reporter.assignments import get_assignment, read_literal

ASSIGNMENT = get_assignment(ROOT / "kernels", "qkv")
Q = ASSIGNMENT.spec
import qkv_host  # noqa: E402  (the folder is on sys.path once the spec is loaded)

SMALL = [c for c, p in Q.CASES.items() if p["n_samples"] * p["n_words"] <= 1001]


@pytest.mark.parametrize("case", SMALL)
def test_reference_is_the_sum_in_float64_rounded_once(case):
    p = Q.CASES[case]
    w, h = Q.generate_input(**p, device="cpu")
    assert w.shape == (p["d_qkv"], p["d_model"]) and h.shape == (p["n_samples"] * p["n_words"], p["d_model"])
    assert w.dtype == h.dtype == torch.float32 and bool((w.abs() <= 1).all()) and bool((h.abs() <= 1).all())
    ref = Q.ref_kernel((w, h))
    for i, j in ((0, 0), (h.shape[0] - 1, w.shape[0] - 1), (h.shape[0] // 2, w.shape[0] // 3)):
        exact = sum(float(w[j, k]) * float(h[i, k]) for k in range(p["d_model"]))
        assert float(ref[i, j]) == float(torch.tensor(exact, dtype=torch.float64).float())


def test_inputs_are_seeded_and_the_weights_drawn_first():
    p = dict(Q.CASES["test_odd"])
    a = Q.generate_input(**p, device="cpu")
    assert all(torch.equal(x, y) for x, y in zip(a, Q.generate_input(**p, device="cpu"), strict=True))
    p["n_words"] += 1  # more rows of h_in: the weights, drawn first, and the rows before do not change
    b = Q.generate_input(**p, device="cpu")
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1][: a[1].shape[0]])
    c = Q.generate_input(**{**Q.CASES["test_odd"], "seed": Q.SEED + 1}, device="cpu")
    assert not torch.equal(a[0], c[0]) and not torch.equal(a[1], c[1])


@pytest.mark.parametrize("case", SMALL)
def test_a_sum_in_another_order_passes_and_a_missing_term_fails(case):
    w, h = Q.generate_input(**Q.CASES[case], device="cpu")
    out = h.flip(1) @ w.flip(1).T  # fp32, i_model backwards: another order than the reference's
    ok, msg = Q.check_implementation((w, h), out)
    assert ok, msg
    i, j = h.shape[0] - 1, w.shape[0] - 1  # the last row and column: an edge tile's
    bad = out.clone()
    bad[i, j] -= w[j, 7] * h[i, 7]  # one term of the sum left out
    ok, msg = Q.check_implementation((w, h), bad)
    assert not ok and f"first at [{i}, {j}]" in msg
    assert not Q.check_implementation((w, h), out.T.contiguous())[0] or w.shape[0] == h.shape[0]
    assert not Q.check_implementation((w, h), out.double())[0]


def test_the_tolerance_grows_with_the_sum_and_stays_far_below_one_term():
    t32, t512 = Q.tolerance(32), Q.tolerance(512)
    assert t32.atol < t512.atol < 1e-3 and t32.rtol == t512.rtol == 2 * Q.FP32_EPS
    assert Q.TOLERANCE == Q.tolerance(max(c["d_model"] for c in Q.CASES.values()))


def test_the_work_model_and_its_roof():
    w0 = Q.work_model(**Q.CASES["layer0"])
    assert w0.flops == 2 * 29700 * 96 * 32 and w0.bytes == 4 * (96 * 32 + 29700 * 32 + 29700 * 96)
    assert w0.ceiling == "copy" and w0.intensity < Q.COMPUTE_BOUND_INTENSITY
    w1 = Q.work_model(**Q.CASES["layer1"])
    assert w1.flops == 2 * 2970 * 1536 * 512 and w1.ceiling == "matmul_fp32" and w1.intensity > 100


def test_the_host_refuses_what_the_kernels_cannot_read():
    w, h = torch.zeros(8, 6), torch.zeros(5, 6)  # d_model 6: rows are not whole quads
    with pytest.raises(ValueError, match="d_model must be a multiple of 4"):
        qkv_host.check_inputs((w, h))
    with pytest.raises(ValueError, match="must share d_model"):
        qkv_host.check_inputs((torch.zeros(8, 8), torch.zeros(5, 4)))
    with pytest.raises(ValueError, match="float32"):
        qkv_host.check_inputs((torch.zeros(8, 8, dtype=torch.float64), torch.zeros(5, 8)))
    with pytest.raises(ValueError, match="contiguous"):
        qkv_host.check_inputs((torch.zeros(8, 16)[:, :8], torch.zeros(5, 8)))


def _split_model_stores(d_ws: int, d_qkv: int, m_h: int, m_w: int, m_d: int, threads: int) -> list[tuple[int, int]]:
    """The outputs v03 (REDUCE 2) stores, walked lane by lane as its loop runs: a warp takes 32 / M_D
    items a round, a lane past the end computes but stores nothing, and the lanes of a group share a
    block's stores (lane p stores the outputs o with o % M_D == p)."""
    col_groups = -(-d_qkv // m_w)
    items = -(-d_ws // m_h) * col_groups
    per_warp, warps = 32 // m_d, threads // 32
    stored = []
    for warp, lane in itertools.product(range(warps), range(32)):
        sub, part = divmod(lane, m_d)
        first = warp * per_warp
        while first < items:
            if first + sub < items:
                rg, cg = divmod(first + sub, col_groups)
                for i, j in itertools.product(range(m_h), range(m_w)):
                    row, col = rg * m_h + i, cg * m_w + j
                    if (i * m_w + j) % m_d == part and row < d_ws and col < d_qkv:
                        stored.append((row, col))
            first += warps * per_warp
    return stored


@pytest.mark.parametrize("m_h,m_w,m_d", [(2, 4, 4), (2, 4, 2), (2, 4, 8), (1, 4, 4)])
@pytest.mark.parametrize("d_ws,d_qkv,threads", [(97, 36, 4 * 32), (1001, 108, 7 * 8 * 32)])
def test_the_split_version_stores_every_output_once(m_h, m_w, m_d, d_ws, d_qkv, threads):
    stored = _split_model_stores(d_ws, d_qkv, m_h, m_w, m_d, threads)
    assert len(stored) == d_ws * d_qkv and set(stored) == set(itertools.product(range(d_ws), range(d_qkv)))


def _configs(version) -> list[dict]:
    src = version.path.read_text()
    config = read_literal(version.path, "CONFIG") if "CONFIG = {" in src else None
    sweep = read_literal(version.path, "SWEEP") if "SWEEP = [" in src else None
    out = [c for c in [config, *(sweep or [])] if c]
    return out or [{}]


BUILDS = [(v, {k: val for k, val in c.items() if k not in ("BLOCKS_PER_SM", "ZERO_OUT")}, i > 0)
          for v in ASSIGNMENT.versions() for i, c in enumerate(_configs(v))]  # i > 0: a sweep point, not CONFIG
THIN_AND_GEMM = [{"BM": 64, "BN": 96, "BK": 32, "TM": 4, "TN": 4}, {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8}]


@pytest.mark.skipif(cuda_build.NVRTC_LIBRARY is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")
@pytest.mark.parametrize("source,defines", [
    pytest.param(Path(v.path).with_suffix(".cu"), d, marks=(pytest.mark.sweep_points,) if swept else (),
                 id=f"{v.short}-" + ("-".join(f"{k}{val}" for k, val in d.items()) or "defaults"))
    for v, d, swept in BUILDS] + [
    pytest.param(ROOT / "kernels" / "qkv" / name, d, id=f"{name[:3]}-" + "-".join(f"{k}{val}" for k, val in d.items()))
    for name in ("v04_smem_tiles.cu", "v05_lean_launch.cu") for d in THIN_AND_GEMM])
def test_every_configuration_builds_without_a_spill(source, defines):
    build = cuda_build.nvrtc(source, defines)
    assert build.ok, build.log[-2000:]
    (kernel,) = build.kernels()
    assert kernel.spill_stores == 0 and kernel.spill_loads == 0, build.log[-2000:]
