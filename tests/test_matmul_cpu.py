"""matmul's assignment on the CPU: the reference and the seeded inputs, the tolerances (a correct
fp32 or fp16 product passes, one wrong product fails), the work model, the lecture's traffic
formulas (checked against its statements and against reads counted by walking each version's loop
nest), and every version's CONFIG built by the offline NVRTC in both dtypes without a spill."""

from __future__ import annotations

import functools

import pytest
import torch
from conftest import ROOT, build_param

import cuda_build  # tests/cuda_build.py

from reporter.assignments import get_assignment  # noqa: E402

# loaded by the reporter under a name of its own: a plain `import assignment` would leave matmul's in
# sys.modules for the next test file of this worker that imports its own assignment that way
ASSIGNMENT = get_assignment(ROOT / "kernels", "matmul")
M = ASSIGNMENT.spec
import matmul_traffic as mt  # noqa: E402  (the folder is on sys.path once the spec is loaded)
import matmul_traffic_tc as mtc  # noqa: E402

VERSIONS = [v.name for v in ASSIGNMENT.versions()]


@pytest.mark.parametrize("n", [1, 5, 127])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_reference_is_the_product_in_float64_rounded_once(n, dtype):
    a, b = M.generate_input(n, dtype, M.SEED, device="cpu")
    assert a.dtype == b.dtype == M._dtype(dtype) and a.shape == b.shape == (n, n)
    assert bool((a >= -1).all()) and bool((a <= 1).all()) and not torch.equal(a, b)
    ref = M.ref_kernel((a, b))
    assert ref.dtype == a.dtype
    rows = [[sum(float(a[i, k]) * float(b[k, j]) for k in range(n)) for j in range(n)] for i in range(min(n, 3))]
    assert torch.equal(ref[: len(rows)], torch.tensor(rows, dtype=torch.float64).to(a.dtype))


def test_inputs_are_seeded():
    a = M.generate_input(64, "float32", 7, device="cpu")
    assert all(torch.equal(x, y) for x, y in zip(a, M.generate_input(64, "float32", 7, device="cpu")))
    assert not torch.equal(a[0], M.generate_input(64, "float32", 8, device="cpu")[0])
    # the fp16 input is the fp32 draw rounded: the two dtypes multiply the same matrices to 2^-11
    h = M.generate_input(64, "float16", 7, device="cpu")
    assert torch.allclose(h[0].float(), a[0], rtol=2**-11, atol=0)


@pytest.mark.parametrize("case", [c for c, p in M.CASES.items() if p["n"] <= 1000])
def test_a_correct_product_passes_and_one_wrong_product_fails(case):
    params = M.CASES[case]
    a, b = M.generate_input(params["n"], params["dtype"], params["seed"], device="cpu")
    out = (a.float() @ b.float()).to(a.dtype)  # fp32 accumulate, another order than the reference's
    ok, msg = M.check_implementation((a, b), out)
    assert ok, msg
    n = params["n"]
    bad = out.clone()
    i, j = n // 2, n - 1  # the last column: an edge tile's
    bad[i, j] = (bad[i, j].double() + a[i, n - 1].double() * b[n - 1, j].double() + 0.25).to(a.dtype)
    ok, msg = M.check_implementation((a, b), bad)
    assert not ok and f"first at [{i}, {j}]" in msg
    assert not M.check_implementation((a, b), out.float() if a.dtype == torch.float16 else out.double())[0]
    assert not M.check_implementation((a, b), out[:-1])[0]


def test_the_tolerances_grow_with_n_and_the_printed_one_is_the_loosest():
    for dtype in ("float32", "float16"):
        assert M.tolerance(127, dtype).atol < M.tolerance(8192, dtype).atol
    assert M.tolerance(8192, "float32").atol == pytest.approx(8 * 2**-23 * 8192 / 3)
    loosest = M.TOLERANCE
    for p in M.CASES.values():
        t = M.tolerance(p["n"], p["dtype"])
        assert t.atol <= loosest.atol and t.rtol <= loosest.rtol
    with pytest.raises(ValueError):
        M.tolerance(16, "bfloat16")


def test_work_model():
    w = M.work_model(4096, "float32")
    assert w.flops == 2 * 4096**3 and w.bytes == 3 * 4096 * 4096 * 4 and w.ceiling == "matmul_fp32"
    h = M.work_model(4096, "float16")
    assert h.bytes == w.bytes / 2 and h.ceiling == "matmul_fp16"
    assert M.BENCHMARK_CASE in M.CASES and M.CASES[M.BENCHMARK_CASE] == dict(n=4096, dtype="float32", seed=M.SEED)
    for n in (1024, 4096, 8192):
        for suffix, dtype in (("", "float32"), ("_fp16", "float16")):
            assert any(p == dict(n=n, dtype=dtype, seed=M.SEED) for p in M.CASES.values()), (n, dtype)


# ---------------------------------------------------------------- the lecture's traffic model


@pytest.mark.parametrize("n", [64, 1024, 4096])
def test_the_formulas_are_the_lectures_statements(n):
    assert mt.one_per_output(n).global_reads == 2 * n**3  # "N² x 2N = 2N³"
    v = 4
    assert mt.thread_tiled(n, v).global_reads == pytest.approx(n**3 / v + n**3)  # "(N²/V²)(NV + NV²)"
    assert mt.register_tiled(n, v).global_reads == pytest.approx(2 * n**3 / v)  # "2N³/V"
    t = mt.shared_tiled(n, 64, v)
    assert t.global_reads == pytest.approx(2 * n**3 / 64) and t.shared_reads == pytest.approx(2 * n**3 / v)
    assert (t.formula, t.shared_formula) == ("2N³/L", "2N³/V")
    assert t.global_bytes(4) == 4 * t.global_reads and t.shared_bytes(2) == 2 * t.shared_reads
    with pytest.raises(ValueError):
        mt.shared_tiled(n, 64, 3)


def _count_loops(n: int, l: int, v: int, s: int) -> tuple[int, int]:
    """Global and shared element reads of the lecture's v3 loop nest, counted by walking it: every
    block fetches its S x L slices of A and B; every thread reads V of sA and V of sB per k."""
    glob = shared = 0
    blocks, threads = (n // l) ** 2, (l // v) ** 2
    for _ in range(blocks):
        for _k0 in range(0, n, s):
            glob += 2 * s * l
            shared += threads * s * 2 * v
    return glob, shared


def _count_v15(n: int, v: int) -> int:
    """Reads of the lecture's v1.5 loop nest: per thread, for each of its V rows a row of A (N), and
    for each (row, column) a column of B (N)."""
    return (n // v) ** 2 * v * (n + v * n)


@pytest.mark.parametrize("n,l,v,s", [(16, 8, 2, 4), (32, 16, 4, 8), (64, 32, 4, 16)])
def test_the_formulas_match_reads_counted_in_the_loop_nests(n, l, v, s):
    t = mt.shared_tiled(n, l, v)
    assert (t.global_reads, t.shared_reads) == _count_loops(n, l, v, s)
    assert mt.thread_tiled(n, v).global_reads == _count_v15(n, v)
    assert mt.register_tiled(n, v).global_reads == (n // v) ** 2 * n * 2 * v


def _version(name: str):
    return ASSIGNMENT.version(name).load()


def _fp16_only(mod) -> bool:
    return getattr(mod, "CASES_WHERE", {}) == {"dtype": "float16"}


def _fp32_only(mod) -> bool:
    return getattr(mod, "CASES_WHERE", {}) == {"dtype": "float32"}


@pytest.mark.parametrize("n,bm,bn,wm,wn", [(16, 8, 16, 4, 8), (64, 16, 32, 8, 32), (64, 32, 64, 16, 64)])
def test_the_rectangular_formula_matches_reads_counted_in_the_loop_nest(n, bm, bn, wm, wn):
    """Every BM x BN block reads BM rows of A and BN columns of B, one k at a time; every WM x WN unit
    reads its WM values of A and WN of B per k."""
    glob = shared = 0
    for _ in range((n // bm) * (n // bn)):
        for _k in range(n):
            glob += bm + bn
            shared += (bm // wm) * (bn // wn) * (wm + wn)
    t = mtc.rectangular_tiled(n, bm, bn, wm, wn)
    assert (t.global_reads, t.shared_reads) == (glob, shared)
    assert mtc.rectangular_tiled(n, bm, bm, wm, wm).global_reads == mt.shared_tiled(n, bm, wm).global_reads
    with pytest.raises(ValueError):
        mtc.rectangular_tiled(n, bm, bn, 3 * wm, wn)


@pytest.mark.parametrize("name", [v for v in VERSIONS if _fp16_only(_version(v))])
def test_a_tensor_core_version_refuses_fp32_by_name(name):
    a = torch.zeros((8, 8))
    with pytest.raises(ValueError, match=f"{name}.*fp16.*TF32"):
        _version(name).custom_kernel((a, a))


@pytest.mark.parametrize("name", [v for v in VERSIONS if _fp32_only(_version(v))])
def test_an_fp32_only_version_refuses_fp16_by_name(name):
    a = torch.zeros((8, 8), dtype=torch.float16)
    with pytest.raises(ValueError, match=f"{name}.*fp32.*float16"):
        _version(name).custom_kernel((a, a))


@pytest.mark.parametrize("name", VERSIONS)
def test_each_version_states_its_traffic_with_its_own_tiles(name):
    mod = _version(name)
    t = mod.traffic(4096)
    n = 4096
    number = int(name[1:3])
    if number == 1:
        assert t.global_reads == 2 * n**3
    elif number == 2:
        assert t.global_reads == pytest.approx(n**3 / mod.CONFIG["V"] + n**3)
    elif number == 3:
        assert t.global_reads == pytest.approx(2 * n**3 / mod.CONFIG["V"])
    elif number == 10:  # mma.sync: an L x L block, a warp's WM x WN region
        c = mod.CONFIG
        assert t.global_reads == pytest.approx(2 * n**3 / c["L"])
        assert t.shared_reads == pytest.approx(n**3 / c["WN"] + n**3 / c["WM"])
    elif _fp16_only(mod):  # wgmma: 128 x 256 blocks (from v12 on a pair sharing B: 256 x 256), 64 x 256 warpgroups
        rows = 128 if number == 11 else 256
        assert t.global_reads == pytest.approx(n**3 / 256 + n**3 / rows)
        assert t.shared_reads == pytest.approx(n**3 / 256 + n**3 / 64)
    else:  # v3's two-level tiling and its variants (rectangles in v16: BM x BN blocks, lanes of rows x cols)
        cfg = mod.CONFIG
        rows, cols = (cfg["V"], cfg["V"]) if "V" in cfg else mod.lane_outputs(cfg)
        tile_rows, tile_cols = (cfg["L"], cfg["L"]) if "L" in cfg else (cfg["BM"], cfg["BN"])
        transposition = n**2 if number in (24, 25) else 0  # v24 and v25 read A once more, to transpose it
        # v27: Strassen's seven half-size products, 12 operand terms of each input, 7/8 of the multiply;
        # v28: the sums formed first, each product reading one term
        reads, shared = {27: (1.5, 7 / 8), 28: (7 / 8, 7 / 8), 29: (7 / 8, 7 / 8)}.get(number, (1, 1))
        transposition += 2 * n**2 if number in (28, 29) else 0  # v28's pass over A and B for the operand sums
        transposition += 7 * n**2 / 4 if number == 29 else 0  # v29's pass over the seven products
        assert t.global_reads == pytest.approx(reads * (n**3 / tile_rows + n**3 / tile_cols) + transposition)
        assert t.shared_reads == pytest.approx(shared * (n**3 / rows + n**3 / cols))
    for config in mod.SWEEP:  # every sweep point has a model
        assert mod.traffic(1024, config).global_reads > 0


# ---------------------------------------------------------------- the builds


@functools.cache
def _timed_dtypes() -> dict[str, set[str]]:
    """version -> the dtypes of the cases its committed runs timed."""
    from reporter import store

    out: dict[str, set[str]] = {}
    for r in store.runs(ROOT / "logs", "matmul"):
        out.setdefault(r.version, set()).add(str(r.case.get("dtype")))
    return out


@pytest.mark.skipif(cuda_build.NVRTC_LIBRARY is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")
@pytest.mark.parametrize("fp16", [0, 1])
@pytest.mark.parametrize("name", VERSIONS)
def test_each_config_builds_in_both_dtypes_without_spills(name, fp16):
    """... and a tensor-core version (fp16 only) refuses to build for fp32, by name. A dtype the version's
    runs never timed (v18 on are fp32 only) goes through the front end, where a dtype's code can fail to
    compile; ptxas and the spill check are for the code that was timed (a version with no runs yet: both)."""
    mod = _version(name)
    defines = {**{k: str(v) for k, v in mod.CONFIG.items()}, "ELEM_FP16": str(fp16)}
    if _fp16_only(mod) and not fp16:
        front = cuda_build.nvrtc_front(mod.SOURCE, defines)
        assert not front.ok and "ELEM_FP16=1" in front.log, front.log[-2000:]
        return
    if _fp32_only(mod) and fp16:
        front = cuda_build.nvrtc_front(mod.SOURCE, defines)
        assert not front.ok and "ELEM_FP16=0" in front.log, front.log[-2000:]
        return
    timed = _timed_dtypes().get(name)
    if timed and ("float16" if fp16 else "float32") not in timed:
        front = cuda_build.nvrtc_front(mod.SOURCE, defines)
        assert front.ok, front.log[-3000:]
        return
    build = cuda_build.nvrtc(mod.SOURCE, defines)
    assert build.ok, build.log[-3000:]
    kernels = build.kernels()
    assert kernels, build.log[-3000:]
    for k in kernels:
        assert k.spill_stores == 0 and k.spill_loads == 0 and k.stack_bytes == 0, (k.name, build.log[-2000:])


# v17's loop runs at the register limit (255 a thread on one CTA per SM, 128 on v09's 8 x 8 lanes):
# every point of its sweep, not only CONFIG, must build without a spill in the dtype the sweep times
# (fp32, N = 4096: the recorded sweep's case); CONFIG builds in both dtypes above
V17_SWEEP = _version("v17_unguarded_loop").SWEEP if any(v.startswith("v17_") for v in VERSIONS) else []


def test_v17s_recorded_sweeps_time_fp32_the_dtype_its_sweep_points_are_built_in():
    from reporter import store

    sweeps = store.sweeps(ROOT / "logs", "matmul", "v17_unguarded_loop")
    assert sweeps and all(sw.case["dtype"] == "float32" for sw in sweeps), [sw.case for sw in sweeps]


@pytest.mark.skipif(cuda_build.NVRTC_LIBRARY is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")
@pytest.mark.parametrize("config", [
    build_param(c, defines=c, config=_version("v17_unguarded_loop").CONFIG, id="-".join(f"{k}{v}" for k, v in c.items()))
    for c in V17_SWEEP])
def test_v17_sweep_builds_in_the_swept_dtype_without_spills(config):
    mod = _version("v17_unguarded_loop")
    build = cuda_build.nvrtc(mod.SOURCE, {**{k: str(v) for k, v in config.items()}, "ELEM_FP16": "0"})
    assert build.ok, build.log[-3000:]
    (k,) = build.kernels()
    # 128 x 128 runs two CTAs an SM, 128 registers a thread, and sits at that cap: there NVRTC's
    # allocation is not reproducible compile to compile (26 Nov: the same build gave no spill alone
    # and 8 bytes inside a full xdist run, as its PTX numbering also moves), so a few bytes are let
    # pass; every larger tile must build without any
    at_cap = config["BM"] * config["BN"] <= 128 * 128
    allowed = 16 if at_cap else 0
    assert k.spill_stores <= allowed and k.spill_loads <= allowed and k.stack_bytes <= allowed, \
        (config, build.log[-2000:])
    assert k.shared_bytes <= 48 * 1024  # static shared memory: the launch opts in to nothing more


def test_the_strassen_table_multiplies():
    """matmul_strassen.cuh's table of the seven products, read from the header and run in numpy on
    quadrants: the quadrant sums it names, multiplied and added into C's quadrants with its signs, give
    A·B (so a wrong sign or quadrant fails here, not first on the GPU)."""
    import re

    import numpy as np

    text = (ROOT / "kernels" / "matmul" / "matmul_strassen.cuh").read_text(encoding="utf-8")
    body = text[text.index("strassen_product(int r)"):]
    rows = re.findall(r"(?:case \d|default): return \{([^}]*)\};", body)
    assert len(rows) == 7
    rng = np.random.default_rng(27)
    h = 5
    a, b = rng.standard_normal((2 * h, 2 * h)), rng.standard_normal((2 * h, 2 * h))

    def quad(m, q):
        return m[(q >> 1) * h:(q >> 1) * h + h, (q & 1) * h:(q & 1) * h + h]

    c = np.zeros((2 * h, 2 * h))
    for row in rows:
        f = [float(x.rstrip("f")) for x in row.split(",")]
        a1, a2, sa, b1, b2, sb, c1, c2, s1, s2 = f
        m = (quad(a, int(a1)) + sa * quad(a, int(a2))) @ (quad(b, int(b1)) + sb * quad(b, int(b2)))
        quad(c, int(c1))[...] += s1 * m
        if c2 >= 0:
            quad(c, int(c2))[...] += s2 * m
    assert np.allclose(c, a @ b)


def test_the_strassen_sums_feed_the_same_products():
    """matmul_strassen_sums.cuh's pass (the five sums of A's quadrants and of B's, as its code writes
    them) and its feed table (which block or quadrant each product multiplies), run in numpy with v27's
    table of where each product goes: A·B again."""
    import re

    import numpy as np

    text = (ROOT / "kernels" / "matmul" / "matmul_strassen_sums.cuh").read_text(encoding="utf-8")
    v27 = (ROOT / "kernels" / "matmul" / "matmul_strassen.cuh").read_text(encoding="utf-8")
    targets = re.findall(r"(?:case \d|default): return \{([^}]*)\};", v27[v27.index("strassen_product(int r)"):])
    feed = re.findall(r"(?:case \d|default): return \{(true|false), (\d), (true|false), (\d)\};", text)
    branch_a, branch_b = text[text.index("if (!of_b)"):].split("} else {")[:2]
    sums = [re.findall(r"s\[(\d)\] = add4\((x\d\d), (x\d\d), (-?1\.0)f\);", part) for part in (branch_a, branch_b)]
    assert len(targets) == len(feed) == 7 and [len(s) for s in sums] == [5, 5]
    rng = np.random.default_rng(28)
    h = 4
    a, b = rng.standard_normal((2 * h, 2 * h)), rng.standard_normal((2 * h, 2 * h))

    def quad(m, q):
        return m[(q >> 1) * h:(q >> 1) * h + h, (q & 1) * h:(q & 1) * h + h]

    def blocks(m, formulas):
        x = {f"x{(q >> 1) + 1}{(q & 1) + 1}": quad(m, q) for q in range(4)}
        return {int(i): x[u] + float(s) * x[v] for i, u, v, s in formulas}

    ta, tb = blocks(a, sums[0]), blocks(b, sums[1])
    c = np.zeros((2 * h, 2 * h))
    for (a_sum, qa, b_sum, qb), row in zip(feed, targets):
        ma = ta[int(qa)] if a_sum == "true" else quad(a, int(qa))
        mb = tb[int(qb)] if b_sum == "true" else quad(b, int(qb))
        f = [float(x.rstrip("f")) for x in row.split(",")]
        quad(c, int(f[6]))[...] += f[8] * (ma @ mb)
        if f[7] >= 0:
            quad(c, int(f[7]))[...] += f[9] * (ma @ mb)
    assert np.allclose(c, a @ b)
