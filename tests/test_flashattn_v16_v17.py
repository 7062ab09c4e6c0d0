"""flashattn v16_launch_plan (v15's kernel, its launch planned once per input) and v17_persistent
(v15's steps in a persistent kernel): the CPU parts (what they build, the grid, the plans) and, on
the GPU (pytest -m gpu), correctness where persistence and plans can go wrong: units looping over
heads with a tail, partial last kv tiles, odd Q block counts (no cluster), recycled inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from reporter import cuda  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "kernels" / "flashattn"
ASSIGNMENT = get_assignment(ROOT / "kernels", "flashattn")
LIBRARY = cuda.find_nvrtc_library()


@pytest.fixture(scope="module")
def v16():
    return ASSIGNMENT.version("v16").load()


@pytest.fixture(scope="module")
def v17():
    return ASSIGNMENT.version("v17").load()


def test_sources_are_v15_s_steps_and_nothing_copied():
    v16, v17 = ASSIGNMENT.version("v16"), ASSIGNMENT.version("v17")
    assert FOLDER / "v15_kv176_multicast.cu" in v16.sources and not (FOLDER / "v16_launch_plan.cu").exists()
    assert FOLDER / "launch_plans.py" in v16.sources and FOLDER / "launch_plans.py" in v17.sources
    text = (FOLDER / "v17_persistent.cu").read_text()
    assert '#include "attn_sm90_persistent.cuh"' in text  # its kernel, which v18 builds on
    assert FOLDER / "attn_sm90_persistent.cuh" in v17.sources and FOLDER / "attn_sm90_kv176.cuh" in v17.sources
    assert text.count("__device__") == 0, "v17 adds a kernel only; its device helpers are v15's"
    for v in (v16, v17):
        doc = v.docstring()
        assert "Hypothesis" in doc and "Structure" in doc and len(doc) > 600


@pytest.mark.skipif(LIBRARY is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")
@pytest.mark.parametrize("defines", [dict(BLOCK_N=176, STAGES=2, CLUSTER=2), dict(BLOCK_N=176, STAGES=2, CLUSTER=1),
                                     dict(BLOCK_N=128, STAGES=3, CLUSTER=2)])
def test_persistent_kernel_builds_without_spills_or_serialised_wgmma(defines):
    ok, log = cuda.nvrtc_compile_offline(FOLDER / "v17_persistent.cu", defines=defines, library=LIBRARY)
    assert ok, log[-3000:]
    report = cuda.parse_ptxas_log(log)
    k = next(k for k in report.kernels if k.name == "attn_fwd_persistent" and k.entry)
    assert k.spill_stores == 0 and k.spill_loads == 0 and not k.advisories, (k, report.advisories)


def test_grid_is_one_cta_per_sm_in_whole_clusters_never_more_than_the_units(v17):
    assert v17.grid_ctas(8192, 256, 2, 132) == 132  # 8192 units: one cluster per SM pair
    assert v17.grid_ctas(1024, 64, 2, 132) == 132  # 256 units of 2 blocks
    assert v17.grid_ctas(256, 4, 2, 132) == 8  # 4 heads x 1 pair: 4 clusters
    assert v17.grid_ctas(384, 3, 1, 132) == 9  # odd Q blocks: no cluster, 9 units
    assert v17.grid_ctas(1024, 64, 2, 131) == 130


def test_wrappers_refuse_what_is_not_q_k_v(v16, v17):
    for mod in (v16, v17):
        with pytest.raises(ValueError, match=r"expected \(q, k, v\)"):
            mod.custom_kernel(5)
        with pytest.raises(ValueError, match="not on a CUDA device|float16"):
            mod.custom_kernel((torch.zeros(1, 1, 128, 128),) * 3)


# --------------------------------------------------------------------------- on the GPU


def _check(mod, b: int, h: int, s: int, seed: int) -> None:
    spec = ASSIGNMENT.spec
    data = spec.generate_input(batch_size=b, num_heads=h, seq_len=s, head_dim=128, seed=seed)
    ref = spec.ref_kernel(data)
    out = mod.custom_kernel(data)
    again = mod.custom_kernel(data)
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.float(), ref.float(), rtol=1e-2, atol=1e-2)
    assert torch.equal(out, again), "two calls on one input differ: a race"


@pytest.mark.gpu
@pytest.mark.parametrize("b,h,s", [
    (1, 4, 128),     # one Q block, one partial kv tile, no cluster
    (1, 3, 384),     # odd Q blocks: no cluster; fewer units than SMs
    (1, 4, 1408),    # 8 x 176 exactly
    (2, 66, 1024),   # 528 units over 66 clusters: every cluster loops 8 times, partial last tiles
    (1, 67, 2816),   # 737 units, a tail of 11 extra units
    (4, 8, 8192),    # the benchmark's sequence length
])
@pytest.mark.parametrize("version", ["v17", "v18", "v19", "v20", "v21"])
def test_persistent_matches_the_reference(version, b, h, s):
    """v17 and the versions built on its loop (v18 prefetches, v19 double-buffers Q, v20 and v21
    change v19's stores)."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    _check(ASSIGNMENT.version(version).load(), b, h, s, seed=11 + s + h)


@pytest.mark.gpu
def test_a_plan_follows_its_inputs_not_a_stale_address(v16, v17):
    """Inputs freed and re-drawn at other shapes and seeds: each call checks against its own input."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    for mod in (v16, v17, ASSIGNMENT.version("v20").load(), ASSIGNMENT.version("v21").load()):
        for b, h, s in ((1, 8, 1024), (1, 8, 2048), (1, 8, 1024), (2, 4, 1024)):
            _check(mod, b, h, s, seed=3 + b + s)
