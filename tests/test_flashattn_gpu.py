"""flashattn on the GPU beyond the per-version checks: the running max of v27, v28, v31, v32 and v34, which
moves only when a row outgrew it by 2^8 (v31, v32, v34: when a lane's partial sum of a row's exp2 values passed
2^8), gives the reference's softmax on scores whose maxima keep growing along the keys
(so the max moves on many steps) and on scores whose maxima grow by less than the threshold every
step (so it never moves after the first tile and P grows towards the threshold), as well as on the cases' random
scores."""

from __future__ import annotations

import math

import pytest

from conftest import ROOT
from reporter.assignments import get_assignment

pytestmark = pytest.mark.gpu


def _inputs(kind: str, torch, s: int = 2048):
    """(q, k, v) of shape (1, 16, s, 128) fp16 whose scores grow along the keys: "ramp" scales the keys
    from 0.2 to 3 times their size (the row maxima grow past the threshold over the sequence, so the max
    moves after its first tiles), "creep" raises every score by 7 log2 units each 176-key tile, so the
    stale max moves every second tile, after P reached about 2^7 against it; "jump" raises the scores of the keys
    from 1000 on by 60 log2 units at once (v31's and v32's exp2 values reach about 2^60 against the stale max before
    their rare path moves it; a jump past 128 would overflow them, the limit their docstrings state)."""
    gen = torch.Generator(device="cuda").manual_seed(7)
    shape = (1, 16, s, 128)
    q, k, v = (torch.randn(*shape, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    if kind == "ramp":
        k = k * torch.linspace(0.2, 3.0, s, device="cuda", dtype=torch.float16)[:, None]
    elif kind == "creep":
        # the last feature: q's is 8 and k's 8 * c * (j // 176), so the scaled score q.k / sqrt(128) of
        # key j gains 7 log2 units (7 / log2(e) natural ones) with each 176-key tile
        c = 7.0 * math.sqrt(128) / (8.0 * 8.0 * math.log2(math.e))
        q, k = q.clone(), k.clone()
        q[..., -1] = 8.0
        k[..., -1] = (8.0 * c * (torch.arange(s, device="cuda") // 176)).to(torch.float16)
    elif kind == "jump":
        c = 60.0 * math.sqrt(128) / (8.0 * 8.0 * math.log2(math.e))
        q, k = q.clone(), k.clone()
        q[..., -1] = 8.0
        k[..., -1] = (8.0 * c * (torch.arange(s, device="cuda") >= 1000)).to(torch.float16)
    return q.contiguous(), k.contiguous(), v.contiguous()


@pytest.mark.parametrize("short", ["v27", "v28", "v31", "v32", "v34", "v35", "v36", "v37", "v38", "v39", "v40"])
@pytest.mark.parametrize("kind", ["ramp", "creep", "jump", "random"])
def test_a_stale_running_max_gives_the_softmax(kind, short):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    a = get_assignment(ROOT / "kernels", "flashattn")
    version = a.load(next(v for v in a.versions() if v.short == short))
    data = _inputs(kind, torch)
    out = version.custom_kernel(data)
    ref = a.spec.ref_kernel(data)
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    err = (out.float() - ref.float()).abs()
    tol = a.spec.TOLERANCE
    assert (err <= tol.atol + tol.rtol * ref.float().abs()).all(), f"{short} on {kind}: largest error {err.max().item():.3g}"


def _version(short: str):
    a = get_assignment(ROOT / "kernels", "flashattn")
    return a.load(next(v for v in a.versions() if v.short == short))


def test_v28_takes_the_stale_path_on_random_scores():
    """v28 at its threshold (2^8) computes other bits than v16 on the cases' random scores, and v28 built with a
    threshold of 0 (its max moves whenever a row's grows, v15's rule) the same bits as v16: so the stale max is
    what changes v28's arithmetic, and it is taken (an always-move kernel would pass the softmax checks above)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    v16, v28 = _version("v16"), _version("v28")
    data = _inputs("random", torch)
    base = v16.custom_kernel(data)
    stale = v28.custom_kernel(data)
    always = v28.make_kernel({**v28.CONFIG, "RESCALE_LOG2": 0})(data)
    torch.cuda.synchronize()
    differ = (stale.view(torch.int16) != base.view(torch.int16)).float().mean().item()
    assert differ > 0.01, f"v28 gives v16's bits on {1 - differ:.1%} of the outputs: the stale path was not taken"
    assert torch.equal(always.view(torch.int16), base.view(torch.int16)), "v28 with threshold 0 is not v16 bit for bit"


def test_v30_rounds_q_and_k_to_nearest():
    """v30's rounding pass writes, for every element of Q and K, an e4m3 value as near to it as torch's
    float8_e4m3fn conversion's (both round to nearest; they may break exact ties differently), on values across
    e4m3's range (normals, subnormals, up to 400)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    v30 = _version("v30")
    gen = torch.Generator(device="cuda").manual_seed(11)
    shape = (1, 4, 1024, 128)
    scale = torch.logspace(-3, math.log10(400), 128, device="cuda", dtype=torch.float32)
    q, k, v = ((torch.randn(*shape, device="cuda", generator=gen) * scale).to(torch.float16) for _ in range(3))
    plan = v30.plan(q, k, v, v30.CONFIG)
    plan.first.launch(torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    q8, k8 = plan.buffers
    for name, mine, src in (("q", q8, q), ("k", k8, k)):
        x = src.float()
        got = mine.view(torch.float8_e4m3fn).float()
        nearest = src.to(torch.float8_e4m3fn).float()
        farther = (x - got).abs() > (x - nearest).abs()
        assert not farther.any(), f"{name}: {farther.sum().item()} values rounded farther than to the nearest e4m3"
        ties = (got != nearest).sum().item()
        assert ties < src.numel() // 50, f"{name}: {ties} values differ from torch's at equal distance"


def test_v31_and_v32_take_their_common_path():
    """At their threshold v31 and v32 compute other bits than the same kernels built with a threshold of 1 (2^0),
    whose rare path runs on nearly every step: so the common path, without the max, is what they run (a vote that
    always chose the rare path would pass the softmax checks above)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    data = _inputs("random", torch)
    for short in ("v31", "v32", "v34"):
        version = _version(short)
        common = version.custom_kernel(data)
        rare = version.make_kernel({**version.CONFIG, "RESCALE_LOG2": 0})(data)
        torch.cuda.synchronize()
        differ = (common.view(torch.int16) != rare.view(torch.int16)).float().mean().item()
        assert differ > 0.01, f"{short}: its threshold gives the always-rare build's bits on {1 - differ:.1%} of outputs"


def test_v34_keeps_rows_whose_scores_leap_that_v32_loses():
    """Scores that leap by 125 log2 units at a tile's start (every key from 1024 on, q and k zero but for one feature,
    so the leap is exact): a lane's partial sum of its 32 values overflows though each value (2^125) does not. v32's rare
    path scaled that sum and lost the rows; v34 takes the values and sums again and gives the reference's output."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    a = get_assignment(ROOT / "kernels", "flashattn")
    s = 2048
    gen = torch.Generator(device="cuda").manual_seed(5)
    v = torch.randn(1, 16, s, 128, device="cuda", dtype=torch.float16, generator=gen)
    q = torch.zeros_like(v)
    k = torch.zeros_like(v)
    q[..., -1] = 8.0
    k[..., -1] = (125.0 * math.sqrt(128) / (8.0 * math.log2(math.e)) * (torch.arange(s, device="cuda") >= 1024)).to(
        torch.float16)
    data = (q.contiguous(), k.contiguous(), v)
    ref = a.spec.ref_kernel(data).float()
    tol = a.spec.TOLERANCE
    outs = {short: _version(short).custom_kernel(data).float() for short in ("v32", "v34")}
    torch.cuda.synchronize()
    ok = {short: bool(((out - ref).abs() <= tol.atol + tol.rtol * ref.abs()).all()) for short, out in outs.items()}
    assert ok == {"v32": False, "v34": True}, ok


@pytest.mark.parametrize("short", ["v35", "v36", "v37", "v38", "v39"])
@pytest.mark.parametrize("shape", [(1, 64, 1024, 128), (2, 8, 4096, 128), (1, 3, 1024, 128)])
def test_the_store_warps_write_v34s_bits(shape, short):
    """v35-v39 compute v34's arithmetic and hand only the writing of O to the producer's store warps (v35 by a copy
    loop, v36-v39 by TMA stores; v37 stages each unit's O under the next unit's first S, the last one after its loop;
    v38 copies Q in two halves, one a consumer; v39 issues each unit's first S with the last P.V before it): their
    output is v34's bit for bit, on test_small's shape (four units a CTA on 132 SMs, so each store warp frees its
    buffer three times and writes four blocks), on a shape of 32-step units, and on 24 units (one a CTA, no buffer
    passed back). Each output buffer is poisoned first: the kernel allocates its output like q, and the caching
    allocator hands back the NaN-filled block just freed, so a block the store warps never wrote stays NaN."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    gen = torch.Generator(device="cuda").manual_seed(13)
    data = tuple(torch.randn(*shape, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    outs = {}
    for name in ("v34", short):
        kernel = _version(name).custom_kernel
        kernel(data)  # the launch plan is made (and its allocations done) before the poisoned block is freed
        poison = torch.full(shape, float("nan"), device="cuda", dtype=torch.float16)
        poisoned = poison.data_ptr()
        del poison
        outs[name] = kernel(data)
        assert outs[name].data_ptr() == poisoned, f"{name} wrote a buffer other than the poisoned one"
    torch.cuda.synchronize()
    assert torch.isfinite(outs[short]).all()
    assert torch.equal(outs[short].view(torch.int16), outs["v34"].view(torch.int16))


@pytest.mark.parametrize("short,config", [("v38", {"Q_SECOND_AFTER_K0": 0}), ("v38", {"FIRST_LOADS_IN_ORDER": 0}),
                                          ("v38", {"CLUSTER": 2}), ("v39", {"CLUSTER": 2})])
@pytest.mark.parametrize("shape", [(1, 64, 1024, 128), (2, 8, 4096, 128)])
def test_v38_and_v39_write_v34s_bits_in_their_other_builds(shape, short, config):
    """v38's other orders of the first loads (consumer 1's half asked for at once; no first-load ordering at all)
    and v38 and v39 in clusters of two (K/V halves multicast) still compute v34's bits: the barriers of Q's halves,
    and the boundary's turns and releases, are right in the builds the configuration does not run."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    gen = torch.Generator(device="cuda").manual_seed(17)
    data = tuple(torch.randn(*shape, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    mod = _version(short)
    out = mod.make_kernel({**mod.CONFIG, **config})(data)
    ref = _version("v34").custom_kernel(data)
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    assert torch.equal(out.view(torch.int16), ref.view(torch.int16))
