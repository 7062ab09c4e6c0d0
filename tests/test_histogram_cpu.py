"""The histogram assignment on the CPU: reference, inputs, contention skew, work model, versions'
modules, and the generic CUDA loader's pure parts (the GPU runs are tests/test_gpu_versions.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from reporter import cuda  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = get_assignment(ROOT / "kernels", "histogram")
SPEC = ASSIGNMENT.spec


def loop_count(data: np.ndarray) -> np.ndarray:
    """The plainest histogram: a Python loop over channels, numpy counting one column at a time."""
    out = np.zeros((data.shape[1], 256), dtype=np.int64)
    for c in range(data.shape[1]):
        for value, n in zip(*np.unique(data[:, c], return_counts=True)):
            out[c, value] = n
    return out


# --------------------------------------------------------------------------- reference


@pytest.mark.parametrize("length,channels", [(1, 1), (7, 3), (300, 16), (1000, 512)])
def test_reference_matches_a_loop_count(length, channels):
    rng = np.random.default_rng(length * 1000 + channels)
    data = rng.integers(0, 256, (length, channels), dtype=np.uint8)
    ref = SPEC.ref_kernel((torch.from_numpy(data), 256))
    assert ref.dtype == torch.int32 and tuple(ref.shape) == (channels, 256)
    np.testing.assert_array_equal(ref.numpy(), loop_count(data))
    assert int(ref.sum()) == length * channels


def test_reference_chunks_add_up(monkeypatch):
    """Rows are counted a chunk at a time; a chunk boundary inside the array changes nothing."""
    data = (torch.from_numpy(np.random.default_rng(5).integers(0, 256, (103, 40), dtype=np.uint8)), 256)
    whole = SPEC.ref_kernel(data)
    monkeypatch.setattr(SPEC, "_REF_CHUNK_ELEMENTS", 40 * 10 + 7)  # 10 rows per chunk, last one partial
    assert torch.equal(SPEC.ref_kernel(data), whole)


def test_reference_counts_extreme_values():
    data = (torch.tensor([[0, 255], [255, 255], [0, 0]], dtype=torch.uint8), 256)
    ref = SPEC.ref_kernel(data)
    assert ref[0, 0] == 2 and ref[0, 255] == 1 and ref[1, 255] == 2 and ref[1, 0] == 1
    assert int(ref.sum()) == 6


@pytest.mark.parametrize("peer", ["bincount_per_channel", "bincount_offset"])
def test_peers_are_exact_on_cpu(peer):
    data = SPEC.generate_input(length=257, num_channels=24, num_bins=256, seed=3, device="cpu")
    assert torch.equal(SPEC.PEERS[peer].fn(data), SPEC.ref_kernel(data))


@pytest.mark.parametrize("num_bins", [1, 17, 256])
def test_reference_and_peers_count_num_bins_bins(num_bins):
    """The course's num_bins sets both the values drawn and the output's columns."""
    data = SPEC.generate_input(length=300, num_channels=8, num_bins=num_bins, seed=4, device="cpu")
    array, bins = data
    assert bins == num_bins and int(array.max()) < num_bins
    ref = SPEC.ref_kernel(data)
    assert tuple(ref.shape) == (8, num_bins) and int(ref.sum()) == 300 * 8
    np.testing.assert_array_equal(ref.numpy(), loop_count(array.numpy())[:, :num_bins])
    for peer in SPEC.PEERS.values():
        assert torch.equal(peer.fn(data), ref)


def test_histogram_io_checks_the_course_tuple_and_fits_the_bins():
    import histogram_io as io  # the versions' shared helper, on the path once the assignment is loaded

    array = torch.zeros((4, 8), dtype=torch.uint8)
    assert io.unpack((array, 256))[1] == 256
    for bad in (array, (array,), (array, 256, 1), (array.to(torch.int32), 256), (array, 0), (array, True),
                (array.t(), 256)):
        with pytest.raises((TypeError, ValueError)):
            io.unpack(bad)
    counts = torch.arange(8 * 256, dtype=torch.int32).view(8, 256)
    assert io.fit_bins(counts, 256) is counts
    assert torch.equal(io.fit_bins(counts, 10), counts[:, :10]) and io.fit_bins(counts, 10).is_contiguous()
    wide = io.fit_bins(counts, 300)
    assert tuple(wide.shape) == (8, 300) and torch.equal(wide[:, :256], counts) and not wide[:, 256:].any()


# --------------------------------------------------------------------------- inputs


def test_generate_input_is_the_course_tuple():
    """(array, num_bins), as CS149's generate_input(length, num_channels, num_bins, seed) returns it."""
    import inspect

    assert list(inspect.signature(SPEC.generate_input).parameters)[:4] == ["length", "num_channels", "num_bins",
                                                                           "seed"]
    data = SPEC.generate_input(length=10, num_channels=4, num_bins=256, seed=1, device="cpu")
    assert isinstance(data, tuple) and len(data) == 2 and data[1] == 256


def test_generate_input_is_the_course_draw():
    """The course draws torch.randint(0, num_bins, (length, num_channels), uint8) from a generator
    seeded with the case's seed, and nothing before it: the same call here gives the same bytes."""
    gen = torch.Generator(device="cpu")
    gen.manual_seed(1001)
    expected = torch.randint(low=0, high=256, size=(64, 16), generator=gen, device="cpu", dtype=torch.uint8)
    array, _ = SPEC.generate_input(length=64, num_channels=16, num_bins=256, seed=1001, device="cpu")
    assert torch.equal(array, expected)


def test_generate_input_shape_dtype_range():
    data, _ = SPEC.generate_input(length=1000, num_channels=64, num_bins=256, seed=SPEC.SEED, device="cpu")
    assert data.dtype == torch.uint8 and tuple(data.shape) == (1000, 64) and data.is_contiguous()
    assert data.device.type == "cpu"
    counts = torch.bincount(data.reshape(-1).to(torch.int64), minlength=256)
    assert counts.numel() == 256 and int((counts > 0).sum()) == 256  # every value is drawn


def test_generate_input_is_deterministic_per_seed():
    a, _ = SPEC.generate_input(length=512, num_channels=32, num_bins=256, seed=1001, device="cpu")
    b, _ = SPEC.generate_input(length=512, num_channels=32, num_bins=256, seed=1001, device="cpu")
    c, _ = SPEC.generate_input(length=512, num_channels=32, num_bins=256, seed=1014, device="cpu")
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_generate_input_defaults_to_cuda():
    import inspect

    assert inspect.signature(SPEC.generate_input).parameters["device"].default == "cuda"


def test_contention_case_is_skewed_towards_one_value():
    case = {**SPEC.CASES["contention"], "length": 4096, "num_channels": 64}
    data = SPEC.generate_input(**case, device="cpu")
    hist = SPEC.ref_kernel(data)
    hot = int(hist.sum(0).argmax())
    share = hist[:, hot].double() / data[0].shape[0]  # per channel
    assert (share > 0.85).all() and (share < 0.95).all(), share
    assert torch.equal(SPEC.generate_input(**case, device="cpu")[0], data[0])  # deterministic too
    # the uniform cases have no such value
    flat = SPEC.ref_kernel(SPEC.generate_input(length=4096, num_channels=64, num_bins=256, seed=SPEC.SEED,
                                               device="cpu"))
    assert float(flat.max()) / 4096 < 0.02


# --------------------------------------------------------------------------- spec and work model


def test_cases_and_benchmark():
    assert SPEC.BENCHMARK_CASE == "benchmark"
    # the course's test line: length: 1048576; num_channels: 512; num_bins: 256; seed: 1001
    assert SPEC.CASES["benchmark"] == dict(length=1048576, num_channels=512, num_bins=256, seed=1001)
    for name, c in SPEC.CASES.items():
        assert list(c)[:4] == ["length", "num_channels", "num_bins", "seed"], f"{name}: the course's keys first"
    assert SPEC.TOLERANCE.exact
    lengths = [c["length"] for name, c in SPEC.CASES.items() if name != "benchmark"]
    assert any(n % 128 and n % 256 and n % 1024 for n in lengths)  # one length fits no tile
    for name, c in SPEC.CASES.items():
        if name != "benchmark":
            assert c["length"] * c["num_channels"] <= 128 << 20, f"{name} is too large for the GPU test suite"
    ref = SPEC.REFERENCE_RESULTS[0]
    assert (ref.median_ms, ref.gpu) == (0.315, "H100")


def test_work_model_numbers():
    w = SPEC.work_model(**SPEC.CASES["benchmark"])
    assert w.flops == 0 and w.ceiling == "copy"
    assert w.bytes == 1048576 * 512 + 512 * 256 * 4 == 537395200
    # at the measured copy ceiling of 2977 GB/s the floor is about 0.18 ms
    assert w.bytes / 2977e9 * 1e3 == pytest.approx(0.1805, abs=1e-3)
    c = SPEC.work_model(**SPEC.CASES["contention"])
    assert c.bytes == 131072 * 512 + 512 * 1024


# --------------------------------------------------------------------------- versions


def test_versions_import_without_a_gpu_and_say_how_they_are_built():
    versions = ASSIGNMENT.versions()
    assert [v.short for v in versions][:5] == ["v01", "v02", "v03", "v04", "v05"]
    for v in versions:
        mod = v.load()  # must not need cupy or a GPU to import
        assert callable(mod.custom_kernel)
        assert len(v.docstring()) > 200, f"{v.name}: the docstring is the report's 'how is the code structured'"
        # its own .cu, or (a version that changes only the host side) the .cu of the version it imports
        cus = [s for s in v.sources if s.suffix == ".cu"]
        assert cus and all(cu.is_file() for cu in cus), v.name


def test_swept_version_offers_its_configs():
    mod = ASSIGNMENT.version("v05").load()
    assert mod.CONFIG in mod.SWEEP
    assert all(callable(mod.make_kernel(cfg)) for cfg in mod.SWEEP)


def test_versions_refuse_unsupported_inputs_before_touching_the_gpu():
    mod = ASSIGNMENT.version("v05").load()
    with pytest.raises(ValueError):
        mod.custom_kernel((torch.zeros((8, 6), dtype=torch.uint8), 256))  # channels % 4 != 0
    with pytest.raises(ValueError):
        mod.custom_kernel((torch.zeros((8, 8), dtype=torch.int32), 256))
    with pytest.raises(TypeError):
        mod.custom_kernel(torch.zeros((8, 8), dtype=torch.uint8))  # the array alone: not the course's input


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("cu", sorted((ROOT / "kernels" / "histogram").glob("*.cu")), ids=lambda p: p.name)
def test_sources_build_for_sm90a_without_spills(cu):
    rows = cuda.ptxas_report(cu, arch="sm_90a")
    assert rows, f"{cu.name}: no kernel in the ptxas report"
    for r in rows:
        assert r.spill_stores == 0 and r.spill_loads == 0, f"{cu.name}:{r.name} spills"
        assert r.registers is not None and r.registers <= 128


# --------------------------------------------------------------------------- the generic loader


def test_arch_is_the_arch_specific_target_from_hopper_on(monkeypatch):
    monkeypatch.delenv(cuda.ARCH_ENV, raising=False)
    assert cuda.arch_for((9, 0)) == "sm_90a"
    assert cuda.arch_for("90") == "sm_90a"
    assert cuda.arch_for((10, 0)) == "sm_100a"
    assert cuda.arch_for((8, 0)) == "sm_80"
    monkeypatch.setenv(cuda.ARCH_ENV, "sm_90")
    assert cuda.arch_for((9, 0)) == "sm_90"


def test_compile_options_carry_arch_defines_and_include_dir(tmp_path):
    src = tmp_path / "k.cu"
    opts = cuda.compile_options("sm_90a", src, {"UNROLL": 8, "FAST": True}, ("--maxrregcount=64",))
    assert opts[0] == "--gpu-architecture=sm_90a"
    assert f"-I{tmp_path}" in opts and "-DFAST=1" in opts and "-DUNROLL=8" in opts
    assert opts[-1] == "--maxrregcount=64"
    with pytest.raises(ValueError):
        cuda.define_options({"bad name": 1})


def test_source_digest_follows_local_headers(tmp_path):
    (tmp_path / "h.cuh").write_text("#define X 1\n")
    src = tmp_path / "k.cu"
    src.write_text('#include "h.cuh"\n__global__ void k() {}\n')
    before = cuda.source_digest(src)
    (tmp_path / "h.cuh").write_text("#define X 2\n")
    assert cuda.source_digest(src) != before


def test_kernel_args_need_explicit_types():
    assert cuda.kernel_arg(np.int32(3)).dtype == np.int32
    assert cuda.kernel_arg(None) == np.uint64(0)
    with pytest.raises(TypeError):
        cuda.kernel_arg(3)
    with pytest.raises(TypeError):
        cuda.kernel_arg(1.5)
    with pytest.raises(ValueError):
        cuda.kernel_arg(torch.zeros(4))  # a CPU tensor has no device pointer


def test_parse_ptxas():
    text = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'histogram_persistent' for 'sm_90a'
ptxas info    : Function properties for histogram_persistent
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 48 registers, used 1 barriers, 32768 bytes smem, 400 bytes cmem[0]
"""
    (r,) = cuda.parse_ptxas(text)
    assert (r.name, r.arch, r.registers, r.barriers, r.shared_bytes) == ("histogram_persistent", "sm_90a", 48, 1, 32768)
    assert (r.stack_bytes, r.spill_stores, r.spill_loads) == (8, 4, 4)


@pytest.mark.parametrize("length", [1, 4096, 1048576, 65535 * 66, 65535 * 66 + 1, 100_000_003, 2**31 - 1])
@pytest.mark.parametrize("sms", [1, 132])
def test_v10_gives_no_block_more_rows_than_a_16_bit_counter_holds(length, sms):
    """v10 counts two channels in one 32-bit word, 16 bits each: no block may count more than 65535 rows,
    or a low half would carry into its neighbour. The grid's chunks (and the kernel's cut of the rows,
    chunk c from c·length/chunks) keep every block at or under that, and fill the SMs when they can."""
    v10 = ASSIGNMENT.version("v10").load()
    groups, chunks = v10.grid(length, 512, sms)
    assert groups == 2 and chunks >= max(1, sms // 2)
    cuts = [c * length // chunks for c in range(chunks + 1)]
    assert max(b - a for a, b in zip(cuts, cuts[1:])) <= v10.MAX_ROWS == 65535


@pytest.mark.parametrize("sms", [132, 114, 78])
@pytest.mark.parametrize("channels", [128, 200, 512, 2168, 8704])
def test_v15_grid_gives_every_chunk_one_block_in_whole_clusters(sms, channels):
    """v15's grid (``blocks``) and the kernel's numbering of it (v15_cluster_pairs.cu, mirrored here): every
    (group, chunk) is counted by exactly one block; the two blocks of a paired cluster count neighbouring
    chunks of one group, rank 0 the even one; an unpaired cluster holds no paired block; at most one block
    is idle."""
    v15 = ASSIGNMENT.load(next(v for v in ASSIGNMENT.versions() if v.short == "v15"))
    groups = -(-channels // 128)
    chunks = max(1, sms // groups)
    n = v15.blocks(groups, chunks)
    assert n % 2 == 0
    paired = 2 * (chunks // 2) * groups
    seen: list[tuple[int, int]] = []
    idle = 0
    for b in range(n):
        rank, pair = b % 2, b < paired
        group = (b // 2) % groups if pair else b - paired
        chunk = 2 * (b // 2 // groups) + rank if pair else chunks - 1
        if not pair and group >= groups:
            idle += 1
            continue
        seen.append((group, chunk))
        if pair and rank == 1:
            assert seen[-2] == (group, chunk - 1), f"block {b}: its cluster's blocks are not neighbouring chunks"
        if not pair:
            assert (b ^ 1) >= paired, f"block {b}: an unpaired block shares a cluster with a paired one"
    assert sorted(seen) == [(g, c) for g in range(groups) for c in range(chunks)]
    assert idle <= 1


def test_the_histogram_trace_probe_reduces_stamps_per_block():
    """tools/histogram_trace_probe.py, loaded as the script it is: two blocks' (timer, clock) stamps at entry,
    counted, flush issued and flush performed give the span, the counting ends and each block's flush."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("histogram_trace_probe", ROOT / "tools" / "histogram_trace_probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    # block 0: 2 GHz, enters at 1000 ns, counted at 181 µs, issued 1 µs later, performed 3 µs after counting;
    # block 1: enters 500 ns later, counted at 185 µs, flush 10 µs
    raw = np.array([[1_000, 0, 182_000, 362_000, 183_000, 364_000, 185_000, 368_000],
                    [1_500, 100, 186_000, 369_100, 187_000, 371_100, 196_000, 389_100]], dtype=np.uint64)
    s = probe.reduce_launch(raw)
    assert s["span_us"] == pytest.approx(195.0)
    assert s["entry_spread_us"] == pytest.approx(0.5)
    assert (s["counted_first_us"], s["counted_last_us"]) == (pytest.approx(181.0), pytest.approx(185.0))
    assert s["flush_issue_max_us"] == pytest.approx(1.0)
    assert (s["flush_median_us"], s["flush_max_us"]) == (pytest.approx(6.5), pytest.approx(10.0))
    assert s["after_last_counted_us"] == pytest.approx(10.0)
    assert s["clock_ghz"] == pytest.approx(2.0)
