"""``report device --microbench``: measure load latency and streaming bandwidth at each level of the
memory hierarchy, the way a course's ``mb`` does (LSU EE 7722: ``mb m`` and ``mb s``), into a
:class:`~reporter.records.Microbench` record under ``logs/devices/<gpu>/microbench/``.

**Latency** (``mb_chase`` in ``microbench.cu``): one thread chases a cycle of 64-bit pointers, one
per 128-byte line, in a random order, over working sets from 4 KiB to 256 MiB (powers of two and the
points half-way between). Each size first runs one untimed lap of the cycle (at most
:data:`WARM_CAP` steps), then :data:`CHASE_STEPS` timed steps between two reads of the SM's cycle
counter and of the nanosecond timer. Where the curve steps up is where a level of cache ends
(:mod:`reporter.analysis.microbench` finds the knees).

**Bandwidth** (``mb_stream``): every block reads its footprint with vector loads of 1, 2 or 4
floats in a stride or a permutation pattern (the homework's s<i> and p<i>), summing what it loads.
The footprint sets the level: a 128 KiB region per block read :data:`L1_PASSES` times (L1), one
16 MiB buffer shared by all blocks, each starting at its own offset (L2), and disjoint 4 MiB
regions per block, half a GiB in all (DRAM). Each configuration is launched twice untimed and
:data:`STREAM_REPS` times between CUDA events; the record keeps every sample and the median over
blocks of the cycles one block took. Bytes are what the threads loaded (useful bytes).

**Profiler** (optional, where ncu runs): one launch of each stream configuration under Nsight
Compute, in a child process (``python -m reporter.harness.microbench``), for the columns the
homework reads from CUPTI: sectors and tag look-ups per request, data wavefronts and bank
conflicts per request, issue utilisation, instructions per float, L2 and DRAM bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..assignments import snapshot_of
from ..records import DeviceInfo, DeviceLimits, KernelProfile, LatencyPoint, Microbench, StreamPoint
from .events import Events, Silent

SOURCE = Path(__file__).with_name("microbench.cu")
LINE_BYTES = 128
CHASE_STEPS = 8192
WARM_CAP = 1 << 19
LATENCY_MIN_LG, LATENCY_MAX_LG = 12, 28  # 4 KiB to 256 MiB
STREAM_REPS = 7
THREADS = 1024
L1_REGION = 128 << 10
L1_PASSES = 200
L2_BUFFER = 16 << 20
DRAM_REGION = 4 << 20
BUFFER_BYTES = 1 << 30

#: ncu metrics of the stream table (every name is checked against ``ncu --query-metrics`` in the tests)
STREAM_METRICS: tuple[str, ...] = (
    "gpu__time_duration.sum",
    "smsp__thread_inst_executed.sum",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_set_accesses_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_lgds_cmd_read.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_cmd_read.sum",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "dram__bytes_read.sum",
)

#: fp32 and fp64 FMA units per SM by compute capability (NVIDIA's CUDA programming guide, arithmetic
#: instruction throughput table); None where not listed
LANES_PER_SM: dict[str, tuple[int, int]] = {
    "7.0": (64, 32), "7.5": (64, 2), "8.0": (64, 32), "8.6": (128, 2), "8.7": (128, 2), "8.9": (128, 2),
    "9.0": (128, 64), "10.0": (128, 64), "12.0": (128, 2),
}


@dataclass(frozen=True)
class StreamSpec:
    level: str
    blocks: int
    vector: int
    pattern: str  # 's0'..'s5', 'p1'..'p3'

    @property
    def lg(self) -> int:
        return int(self.pattern[1])

    @property
    def defines(self) -> dict[str, int]:
        return {"V": self.vector, "PATTERN": 0 if self.pattern[0] == "s" else 1, "LG": self.lg, "THREADS": THREADS}


def stream_specs(sms: int) -> list[StreamSpec]:
    """The rows of ``mb s``, in its order: each level with one block per SM and scalar, 2- and 4-wide
    loads; the L2 with fewer blocks; then the permutations and strides that show sectors, tag look-ups
    and bank conflicts per request."""
    out = [StreamSpec("DRAM", sms, v, "s0") for v in (1, 2, 4)]
    out += [StreamSpec("L2", sms, v, "s0") for v in (1, 2, 4)]
    out += [StreamSpec("L2", b, 1, "s0") for b in (max(1, sms // 2), 2, 1)]
    out += [StreamSpec("L2", 1, 1, f"p{i}") for i in (1, 2, 3)]
    out += [StreamSpec("L1", sms, v, "s0") for v in (1, 2, 4)]
    out += [StreamSpec("L1", sms, 1, f"p{i}") for i in (1, 2, 3)]
    out += [StreamSpec("L1", sms, 1, f"s{i}") for i in (1, 2, 3, 4, 5)]
    return out


@dataclass(frozen=True)
class StreamLayout:
    """Where one configuration's blocks read, in vectors of the buffer (every figure a multiple of the
    kernel's STEP: its warps' chunks side by side)."""

    total: int  # the buffer the blocks read in, wrapping to its start
    block_offset: int
    region: int
    passes: int
    footprint_bytes: int

    def region_bytes(self, vector: int) -> int:
        return self.region * 4 * vector


def step(spec: StreamSpec) -> int:
    """Vectors between a warp's successive chunks: all warps of a block read one chunk each a round."""
    return THREADS // 32 * (32 << spec.lg)


def layout(spec: StreamSpec) -> StreamLayout:
    """Where ``spec``'s blocks read; every figure a whole number of rounds, as the kernel reads them (it rounds
    down, and a record's bytes count the whole region)."""
    lay = _layout(spec)
    st = step(spec)
    if lay.region % st or lay.total % st or lay.block_offset % st or lay.region > lay.total:
        raise ValueError(f"{spec}: region {lay.region}, buffer {lay.total} and offset {lay.block_offset} vectors "
                         f"must be whole rounds of {st}")
    return lay


def _layout(spec: StreamSpec) -> StreamLayout:
    vb = 4 * spec.vector  # bytes a vector
    if spec.level == "L1":  # own region per block, read L1_PASSES times
        region = L1_REGION // vb
        return StreamLayout(BUFFER_BYTES // vb, region, region, L1_PASSES, L1_REGION * spec.blocks)
    if spec.level == "L2":  # one shared buffer, every block reading all of it from its own start
        vecs = L2_BUFFER // vb
        offset = (vecs // spec.blocks) // step(spec) * step(spec)
        return StreamLayout(vecs, offset, vecs, 1, L2_BUFFER)
    region = DRAM_REGION // vb
    if region * spec.blocks * vb > BUFFER_BYTES:
        raise ValueError(f"{spec.blocks} blocks of {DRAM_REGION >> 20} MiB do not fit the {BUFFER_BYTES >> 20} MiB buffer")
    return StreamLayout(BUFFER_BYTES // vb, region, region, 1, DRAM_REGION * spec.blocks)


def latency_sizes() -> list[int]:
    out = []
    for lg in range(LATENCY_MIN_LG, LATENCY_MAX_LG + 1):
        out.append(1 << lg)
        if lg < LATENCY_MAX_LG:
            out.append(3 << (lg - 1))
    return out


def chase_cycle(lines: int, seed: int) -> list[int]:
    """The next line of each line: one random cycle through all ``lines`` (numpy's generator, seeded)."""
    import numpy as np

    order = np.random.default_rng(seed).permutation(lines)
    nxt = np.empty(lines, dtype=np.int64)
    nxt[order] = np.roll(order, -1)
    return nxt.tolist()


# --------------------------------------------------------------------------- on the GPU


def device_limits(info: DeviceInfo) -> DeviceLimits:
    import cupy

    p = cupy.cuda.runtime.getDeviceProperties(0)
    lanes = LANES_PER_SM.get(info.compute_capability)
    return DeviceLimits(
        max_threads_per_block=int(p["maxThreadsPerBlock"]), max_threads_per_sm=int(p["maxThreadsPerMultiProcessor"]),
        warp_size=int(p["warpSize"]), shared_bytes_per_block=int(p["sharedMemPerBlock"]),
        shared_bytes_per_block_optin=int(p["sharedMemPerBlockOptin"]),
        shared_bytes_per_sm=int(p["sharedMemPerMultiprocessor"]), const_bytes=int(p["totalConstMem"]),
        registers_per_block=int(p["regsPerBlock"]), registers_per_sm=int(p["regsPerMultiprocessor"]),
        memory_bus_bits=int(p["memoryBusWidth"]) if "memoryBusWidth" in p else None,
        fp32_lanes_per_sm=lanes[0] if lanes else None, fp64_lanes_per_sm=lanes[1] if lanes else None)


def _kernel(name: str, defines: dict[str, int] | None = None):  # type: ignore[no-untyped-def]
    from ..cuda import load_module

    k = load_module(SOURCE, defines=defines or {}).kernel(name)
    k.tracked = False
    try:  # as much L1 as the SM has: no shared memory is used
        from cupy.cuda import driver

        driver.funcSetAttribute(k.raw.ptr, 9, 0)  # CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
    except Exception:  # an older driver without the attribute: the default carve-out
        pass
    return k


def measure_latency(size: int, seed: int) -> LatencyPoint:
    import numpy as np
    import torch

    lines = size // LINE_BYTES
    words = LINE_BYTES // 8
    buf = torch.zeros(lines * words, dtype=torch.int64, device="cuda")
    base = buf.data_ptr()
    nxt = np.asarray(chase_cycle(lines, seed), dtype=np.int64)
    host = np.zeros(lines * words, dtype=np.int64)
    host[np.arange(lines) * words] = base + nxt * LINE_BYTES
    buf.copy_(torch.from_numpy(host))
    out = torch.zeros(3, dtype=torch.int64, device="cuda")
    warm = min(lines, WARM_CAP)
    k = _kernel("mb_chase")
    k((1,), (1,), buf, np.int64(warm), np.int64(CHASE_STEPS), out)
    torch.cuda.synchronize()
    cycles, ns, _ = (int(x) for x in out.tolist())
    del buf
    return LatencyPoint(bytes=lines * LINE_BYTES, stride_bytes=LINE_BYTES, warm_steps=warm, steps=CHASE_STEPS,
                        cycles=cycles / CHASE_STEPS, ns=ns / CHASE_STEPS)


def _stream_args(spec: StreamSpec, buffer, sink, cycles):  # type: ignore[no-untyped-def]
    import numpy as np

    lay = layout(spec)
    return (buffer, np.uint32(lay.total), np.uint32(lay.block_offset), np.uint32(lay.region), np.int32(lay.passes),
            sink, cycles)


def measure_stream(spec: StreamSpec, buffer, sink, cycles) -> StreamPoint:  # type: ignore[no-untyped-def]
    import torch

    from .timing import CudaEventTimer, StoppingRule, benchmark

    k = _kernel("mb_stream", spec.defines)
    args = _stream_args(spec, buffer, sink, cycles)
    # the harness's one timing loop: 2 untimed launches, then STREAM_REPS timed ones, no cache flush (the
    # level's footprint is what each launch reads: an L1 or L2 run reads its data again on purpose)
    rule = StoppingRule(min_reps=STREAM_REPS, max_reps=STREAM_REPS, warmup_reps=2, budget_s=600.0, wall_s=600.0)
    stats = benchmark(lambda rep: k((spec.blocks,), (THREADS,), *args), timer=CudaEventTimer(), rule=rule)
    torch.cuda.synchronize()
    samples = [float(x) for x in stats.samples_ms]
    per_block = sorted(float(c) for c in cycles[: spec.blocks].tolist())
    lay = layout(spec)
    return StreamPoint(level=spec.level, blocks=spec.blocks, threads=THREADS, vector=spec.vector,  # type: ignore[arg-type]
                       pattern=spec.pattern, passes=lay.passes, region_bytes=lay.region_bytes(spec.vector),
                       footprint_bytes=lay.footprint_bytes,
                       bytes=spec.blocks * lay.passes * lay.region_bytes(spec.vector), samples_ms=samples,
                       block_cycles=per_block[len(per_block) // 2])


def stream_buffers(sms: int):  # type: ignore[no-untyped-def]
    import torch

    g = torch.Generator(device="cuda").manual_seed(7722)
    buffer = torch.rand(BUFFER_BYTES // 4, device="cuda", generator=g)  # [0, 1): never sums to the sentinel
    sink = torch.zeros(max(sms, 1) * 2 * THREADS, device="cuda")
    cycles = torch.zeros(max(sms, 1) * 2, dtype=torch.int64, device="cuda")
    return buffer, sink, cycles


def _launch_once(specs: Sequence[StreamSpec]) -> None:
    """The child's work under ncu: one launch of each configuration, in order."""
    import torch

    sms = max(s.blocks for s in specs)
    buffer, sink, cycles = stream_buffers(sms)
    kernels = [_kernel("mb_stream", s.defines) for s in specs]  # every build before the first profiled launch
    for spec, k in zip(specs, kernels, strict=True):
        k((spec.blocks,), (THREADS,), *_stream_args(spec, buffer, sink, cycles))
    torch.cuda.synchronize()


def profile_streams(specs: Sequence[StreamSpec], *, timeout_s: float = 1200.0
                    ) -> tuple[list[KernelProfile] | None, str, str, str | None]:
    """One launch of each configuration under ncu: (profiles in launch order or None, status, reason,
    profiler version)."""
    from .profile import NcuOutputError, classify_failure, find_ncu, ncu_version, parse_ncu_csv

    ncu = find_ncu()
    if ncu is None:
        return None, "unavailable", "no ncu on PATH (set REPORT_NCU)", None
    version = ncu_version(ncu)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump([asdict(s) for s in specs], fh)
        spec_file = fh.name
    cmd = [ncu, "--clock-control", "none", "--cache-control", "all", "--print-units", "base", "--csv",
           "--page", "raw", "--kernel-name", "mb_stream", "--metrics", ",".join(STREAM_METRICS),
           sys.executable, "-m", "reporter.harness.microbench", "--launch-once", spec_file]
    label = f"ncu {version}" if version else "ncu"
    try:  # ncu and the child it starts in a session of their own: a timeout ends both
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=str(Path(__file__).resolve().parents[2]), env=dict(os.environ),
                                start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return None, "failed", f"ncu took over {timeout_s:.0f} s", label
    except OSError as e:  # REPORT_NCU names a file that does not run: the measurements so far are kept
        return None, "unavailable", f"{ncu}: {e.strerror or e}", label
    finally:
        os.unlink(spec_file)
    if proc.returncode != 0:
        status, reason = classify_failure(proc.returncode, stdout, stderr)
        return None, status, reason, label
    try:
        kernels = parse_ncu_csv(stdout)
    except (NcuOutputError, ValueError) as e:  # a table we cannot read: a failed profile, not a lost run
        return None, "failed", str(e).splitlines()[0], label
    if len(kernels) != len(specs):
        return None, "failed", f"ncu profiled {len(kernels)} launches, expected {len(specs)}", label
    return kernels, "ok", "", label


def run_microbench(repo_root: Path, *, profile: bool = True, seed: int = 7722,
                   events: Events | None = None) -> Microbench:
    """Every measurement of the record, on the current device; its progress bar and the profiler's step
    shown through ``events`` (:class:`~reporter.harness.events.Events`; default: nothing shown)."""
    import torch

    from .device import device_info
    from .probe import gpu_reading

    events = events or Silent()
    info = device_info()
    limits = device_limits(info)  # before measuring: a runtime without a property fails at once
    started = datetime.now(UTC)
    before = gpu_reading()
    sizes = latency_sizes()
    specs = stream_specs(info.sm_count)
    latency, streams = [], []
    with events.progress() as bars:
        task = bars.add_task("micro-benchmarks", total=len(sizes) + len(specs))
        for i, size in enumerate(sizes):
            latency.append(measure_latency(size, seed + i))
            bars.update(task, completed=len(latency), description=f"latency, {size >> 10} KiB")
        torch.cuda.empty_cache()
        buffer, sink, cycles = stream_buffers(info.sm_count)
        for spec in specs:
            streams.append(measure_stream(spec, buffer, sink, cycles))
            bars.update(task, completed=len(latency) + len(streams),
                        description=f"stream {spec.level} V{spec.vector} {spec.pattern} on {spec.blocks} blocks")
        del buffer, sink, cycles
    torch.cuda.empty_cache()
    status, reason, profiler = "skipped", "not asked (--no-profile)", None
    if profile:
        with events.status(f"profiling each of the {len(specs)} streaming configurations once under ncu"):
            kernels, status, reason, profiler = profile_streams(specs)
        if kernels is not None:
            streams = [s.model_copy(update={"profile": k}) for s, k in zip(streams, kernels, strict=True)]
    from .. import store

    return Microbench(
        run_id=store.utc_stamp(started), created_utc=started, device=info, limits=limits,
        command=" ".join(shlex.quote(a) for a in [Path(sys.argv[0]).name, *sys.argv[1:]]),
        code=snapshot_of((SOURCE, Path(__file__)), repo_root), gpu_before=before, gpu_after=gpu_reading(), latency=latency,
        streams=streams, profiler=profiler, profile_status=status, profile_reason=reason,  # type: ignore[arg-type]
        notes=[f"latency: one thread, {CHASE_STEPS} dependent 8-byte loads (ld.global.ca) a size, one pointer per "
               f"{LINE_BYTES}-byte line in a random cycle, after one untimed lap (at most {WARM_CAP} steps)",
               f"bandwidth: {THREADS} threads a block, median of {STREAM_REPS} launches (CUDA events, the harness's "
               "timing loop, no L2 flush) after 2 untimed; bytes are what the threads loaded",
               "profile: one launch of each configuration under ncu, --clock-control none, --cache-control all"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reporter.harness.microbench")
    parser.add_argument("--launch-once", type=Path, required=True,
                        help="a JSON list of stream configurations: launch each once (the profiler's child)")
    args = parser.parse_args(argv)
    specs = [StreamSpec(**d) for d in json.loads(args.launch_once.read_text())]
    _launch_once(specs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
