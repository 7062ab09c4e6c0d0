"""`report device --microbench`: the knees of a latency curve, the stream layouts and figures, the record,
and the command on a record, all without a GPU (the measuring itself is in tests marked gpu)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import fixture_text
from typer.testing import CliRunner

from reporter import ncu_metrics as N
from reporter import store
from reporter.analysis import microbench as A
from reporter.cli import app
from reporter.harness import microbench as M
from reporter.records import (CodeSnapshot, DeviceInfo, DeviceLimits, KernelProfile, LatencyPoint, Metric, Microbench,
                              StreamPoint)

FIX = Path(__file__).parent / "fixtures" / "ncu"
KiB, MiB = 1 << 10, 1 << 20


def curve(steps: list[tuple[int, float]], *, noise: float = 0.03, transition: bool = False, seed: int = 1
          ) -> list[LatencyPoint]:
    """A latency curve over the sizes the benchmark measures: ``steps`` is (largest size that fits, cycles)
    per level, the last level unbounded; with ``transition``, a set up to twice a level's capacity partly
    fits, its latency climbing linearly from that level's at the capacity to the next one's at twice it."""
    rng = random.Random(seed)
    out = []
    for size in M.latency_sizes():
        k = next((i for i, (cap, _) in enumerate(steps) if size <= cap), len(steps) - 1)
        cycles = steps[k][1]
        if k > 0 and transition and size <= steps[k - 1][0] * 2:
            cycles = steps[k - 1][1] + (size / steps[k - 1][0] - 1) * (steps[k][1] - steps[k - 1][1])
        cycles *= 1 + rng.uniform(-noise, noise)
        out.append(LatencyPoint(bytes=size, stride_bytes=128, warm_steps=100, steps=8192, cycles=cycles,
                                ns=cycles / 1.755))
    return out


H100_LIKE = [(192 * KiB, 38.0), (32 * MiB, 262.0), (1 << 40, 740.0)]


def test_the_knees_of_a_three_level_curve_give_each_level_its_latency_and_capacity_bracket():
    found = A.levels(curve(H100_LIKE), l2_bytes=50 * MiB)
    assert [lv.name for lv in found] == ["L1", "L2", "DRAM"]
    l1, l2, dram = found
    assert l1.cycles == pytest.approx(38, rel=0.05) and l2.cycles == pytest.approx(262, rel=0.05)
    assert dram.cycles == pytest.approx(740, rel=0.05)
    assert (l1.last_bytes, l1.next_bytes) == (192 * KiB, 256 * KiB)  # the capacity lies between
    assert (l2.last_bytes, l2.next_bytes) == (32 * MiB, 48 * MiB)
    assert l1.capacity_words == "between 192 KiB and 256 KiB"
    assert dram.next_bytes is None and dram.first_bytes == 48 * MiB
    assert l1.ns == pytest.approx(38 / 1.755, rel=0.05)


def test_a_partly_fitting_set_is_a_transition_not_a_level():
    found = A.levels(curve(H100_LIKE, transition=True, noise=0.0), l2_bytes=50 * MiB)
    assert [lv.name for lv in found] == ["L1", "L2", "DRAM"]
    # 256 KiB (a third of the way up) and 48 MiB (half way) are on no plateau: the levels skip them
    assert (found[0].last_bytes, found[0].next_bytes, found[1].first_bytes) == (192 * KiB, 256 * KiB, 384 * KiB)
    assert (found[1].last_bytes, found[1].next_bytes, found[2].first_bytes) == (32 * MiB, 48 * MiB, 64 * MiB)


def test_a_curve_that_keeps_climbing_past_l2_names_the_first_plateau_the_memory_latency():
    pts = curve([(128 * KiB, 33.0), (24 * MiB, 210.0), (96 * MiB, 600.0), (1 << 40, 900.0)], noise=0.0)
    names = [lv.name for lv in A.levels(pts, l2_bytes=50 * MiB)]
    assert names == ["L1", "L2", "DRAM", "DRAM, larger sets"]


def test_two_steps_below_l2_are_numbered_not_guessed():
    pts = curve([(64 * KiB, 30.0), (4 * MiB, 150.0), (40 * MiB, 300.0), (1 << 40, 800.0)], noise=0.0)
    assert [lv.name for lv in A.levels(pts, l2_bytes=50 * MiB)] == ["L1", "L2 (1)", "L2 (2)", "DRAM"]


def test_a_flat_curve_is_one_level_and_noise_alone_makes_no_knee():
    pts = curve([(1 << 40, 500.0)], noise=0.05)
    found = A.levels(pts, l2_bytes=50 * MiB)
    assert len(found) == 1 and found[0].first_bytes == 4 * KiB and found[0].next_bytes is None


def test_the_chase_clock_is_cycles_over_nanoseconds():
    assert A.chase_clock_ghz(curve(H100_LIKE)) == pytest.approx(1.755)


def test_the_chase_is_one_cycle_through_every_line():
    nxt = M.chase_cycle(1000, seed=3)
    seen, at = set(), 0
    for _ in range(1000):
        seen.add(at)
        at = nxt[at]
    assert at == 0 and len(seen) == 1000


def test_latency_sizes_run_from_4_kib_to_256_mib_with_the_half_steps():
    sizes = M.latency_sizes()
    assert sizes[0] == 4 * KiB and sizes[-1] == 256 * MiB and 48 * MiB in sizes and sizes == sorted(sizes)


@pytest.mark.parametrize("spec", M.stream_specs(132), ids=lambda s: f"{s.level}-{s.blocks}-V{s.vector}-{s.pattern}")
def test_every_stream_layout_reads_whole_rounds_inside_its_buffer_and_sizes_its_level(spec):
    lay = M.layout(spec)
    vb = 4 * spec.vector
    step = M.step(spec)  # a round: every warp of the block one chunk
    assert step == M.THREADS // 32 * (32 << spec.lg)
    assert lay.region % step == 0 and lay.total % step == 0 and lay.block_offset % step == 0
    assert lay.region // step >= 1 and lay.region <= lay.total
    if spec.level == "L1":  # each block its own region, in L1 (256 KiB an SM on the H100), never wrapping
        assert lay.region * vb <= 192 * KiB and lay.passes > 1
        assert (spec.blocks - 1) * lay.block_offset + lay.region <= lay.total
    elif spec.level == "L2":  # one buffer, far past any L1 and well inside the 50 MB L2
        assert lay.footprint_bytes == lay.total * vb and 4 * MiB <= lay.footprint_bytes <= 24 * MiB
        assert lay.region == lay.total  # every block reads all of it, from its own start
    else:  # disjoint regions, ten times the L2 in all
        assert spec.blocks * lay.region * vb >= 10 * 50 * MiB
        assert (spec.blocks - 1) * lay.block_offset + lay.region <= lay.total


def test_the_stream_rows_are_the_homeworks():
    specs = M.stream_specs(132)
    assert {s.pattern for s in specs} == {"s0", "s1", "s2", "s3", "s4", "s5", "p1", "p2", "p3"}
    assert {s.vector for s in specs if s.pattern == "s0"} == {1, 2, 4}
    assert {s.blocks for s in specs if s.level == "L2"} == {132, 66, 2, 1}


def test_the_stream_metrics_and_the_homeworks_columns_are_names_ncu_takes():
    catalog = N.parse_query_metrics(fixture_text(FIX / "gh100_metrics.txt.gz"))
    names = [*M.STREAM_METRICS, N.THREAD_INST_EXECUTED, N.ISSUE_ACTIVE_PCT, N.SM_ACTIVE_CYCLES_MAX,
             N.SM_ACTIVE_CYCLES_AVG, N.LSU_READ_CONFLICTS, N.L1_TO_L2]
    assert [p for n in names if (p := N.metric_problem(n, catalog))] == []


# --------------------------------------------------------------------------- a record


def _profile(**values: float) -> KernelProfile:
    return KernelProfile(index=0, name="mb_stream", metrics={k: Metric(value=v) for k, v in values.items()})


def record(profiled: bool = True) -> Microbench:
    info = DeviceInfo(name="NVIDIA H100 80GB HBM3", slug="h100", compute_capability="9.0", sm_count=132,
                      l2_bytes=50 * MiB, memory_bytes=80 << 30, sm_clock_max_mhz=1980.0, memory_clock_max_mhz=2619.0)
    limits = DeviceLimits(max_threads_per_block=1024, max_threads_per_sm=2048, warp_size=32,
                          shared_bytes_per_block=48 * KiB, shared_bytes_per_block_optin=227 * KiB,
                          shared_bytes_per_sm=228 * KiB, const_bytes=64 * KiB, registers_per_block=65536,
                          registers_per_sm=65536, memory_bus_bits=5120, fp32_lanes_per_sm=128, fp64_lanes_per_sm=64)
    streams = []
    for spec in M.stream_specs(132):
        lay = M.layout(spec)
        nbytes = spec.blocks * lay.passes * lay.region_bytes(spec.vector)
        gbps = {"L1": 30000.0, "L2": 9000.0, "DRAM": 3000.0}[spec.level] * (spec.blocks / 132)
        ms = nbytes / gbps / 1e6
        prof = _profile(**{
            "gpu__time_duration.sum": ms * 1e6, "smsp__thread_inst_executed.sum": nbytes / 4 * 2.2,
            "smsp__issue_active.avg.pct_of_peak_sustained_active": 33.0,
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 1000.0,
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 4000.0 * (1 << spec.lg),
            "l1tex__t_set_accesses_pipe_lsu_mem_global_op_ld.sum": 1000.0 * (1 << spec.lg),
            "l1tex__data_pipe_lsu_wavefronts_mem_lgds_cmd_read.sum": 1000.0 * (1 << spec.lg),
            "l1tex__data_bank_conflicts_pipe_lsu_cmd_read.sum": 1000.0 * ((1 << spec.lg) - 1),
            "l1tex__t_sector_hit_rate.pct": 99.0 if spec.level == "L1" else 0.0,
            "lts__t_sectors_srcunit_tex_op_read.sum": nbytes / 32, "dram__bytes_read.sum": 1e6}) if profiled else None
        streams.append(StreamPoint(level=spec.level, blocks=spec.blocks, threads=1024, vector=spec.vector,
                                   pattern=spec.pattern, passes=lay.passes, region_bytes=lay.region_bytes(spec.vector),
                                   footprint_bytes=lay.footprint_bytes, bytes=nbytes, samples_ms=[ms, ms * 1.01, ms],
                                   block_cycles=lay.region_bytes(spec.vector) * lay.passes / 64.0, profile=prof))
    t = datetime(2026, 11, 27, 3, 0, tzinfo=UTC)
    return Microbench(run_id=store.utc_stamp(t), created_utc=t, device=info, limits=limits, command="report device",
                      code=CodeSnapshot(files=[]), latency=curve(H100_LIKE), streams=streams,
                      profile_status="ok" if profiled else "skipped")


def test_a_stream_row_divides_what_the_threads_loaded_by_the_median_launch():
    mb = record()
    rows = A.stream_rows(mb)
    dram = next(r for r in rows if r.point.level == "DRAM" and r.point.vector == 1)
    assert dram.gbps == pytest.approx(3000.0) and dram.gbps_per_sm == pytest.approx(3000.0 / 132)
    assert dram.bytes_per_cycle_sm == pytest.approx(64.0)
    s5 = next(r for r in rows if r.point.pattern == "s5")
    assert s5.sectors_per_request == pytest.approx(128.0) and s5.conflicts_per_request == pytest.approx(31.0)
    assert s5.insts_per_float == pytest.approx(2.2)
    one = next(r for r in rows if r.point.level == "L2" and r.point.blocks == 1 and r.point.pattern == "s0")
    assert one.gbps_per_sm == pytest.approx(one.gbps)  # one block: the whole rate is one SM's
    ceil = {c.level: c.gbps for c in A.level_ceilings(mb)}
    assert ceil == pytest.approx({"L1": 30000.0, "L2": 9000.0, "DRAM": 3000.0})


def test_the_device_block_reads_as_the_homeworks():
    from reporter.render.device import device_block

    mb = record()
    lines = device_block(mb.device, mb.limits)
    assert lines[0] == "NVIDIA H100 80GB HBM3 @ 1.98 GHz WITH 81920 MiB GLOBAL MEM"
    assert lines[1] == "L2: 51200 kiB    MEM<->L2: 3352.3 GB/s"  # 2619 MHz x 2 x 5120 bits
    assert "SP-FP32/SM: 128  DP-FP64/SM: 64  TH/BL: 1024" in lines[2]
    # 128 x 132 x 1.98 GHz, an FMA one operation; over 3352.3 GB/s / 4 bytes
    assert lines[4].startswith("PEAK: 33454 SP GFLOPS  16727 DP GFLOPS  COMP/COMM: 39.9 SP  39.9 DP")


def test_the_record_round_trips_and_the_command_prints_it(tmp_path):
    mb = record()
    logs = tmp_path / "logs"
    path = store.save(mb, store.microbench_path(logs, mb), logs=logs)
    assert path == logs / "devices" / "h100" / "microbench" / "20261127T030000000Z.json.gz"
    assert store.microbenches(logs) == [mb]
    res = CliRunner().invoke(app, ["device", "--logs", str(logs), "--root", str(tmp_path)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    out = res.output
    assert "GPU 0: NVIDIA H100 80GB HBM3 @ 1.98 GHz" in out
    assert "L1: 38 cycles" in out and "capacity between 192 KiB and 256 KiB" in out
    assert "DRAM" in out and "s5" in out and "128.0" in out


def test_the_command_without_a_record_says_how_to_make_one(tmp_path):
    res = CliRunner().invoke(app, ["device", "--logs", str(tmp_path / "logs"), "--root", str(tmp_path)])
    assert res.exit_code == 2 and "report device --microbench" in res.output


def test_without_the_profiler_the_columns_say_so():
    from reporter.render.device import device_view

    view = device_view(record(profiled=False))
    assert all(row[6] == "–" and row[7] == "–" for row in view.streams)  # issue %, SW unknown, never 0
