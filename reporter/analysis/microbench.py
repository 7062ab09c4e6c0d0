"""What a :class:`~reporter.records.Microbench` record says: the cache levels the latency curve shows
(where it steps up, and how long a load takes on each step), the figures of each streaming row (as
the homework's ``mb s`` prints them), and the measured bandwidth ceiling of each level, which the
roofline charts draw.

**Knees.** The latency curve is flat while the working set fits a level and climbs once it does
not. :func:`levels` walks the sizes in order and groups consecutive points whose latency stays within
:data:`PLATEAU_TOLERANCE` of the group's lowest: a group of at least :data:`MIN_PLATEAU` points is a
plateau, a level of the hierarchy; points between plateaus are the transition (a set that partly
fits). A level's capacity lies between the largest set on its plateau and the next size measured.
A plateau that holds a set larger than the device's L2 is memory (DRAM; with larger sets the latency may
keep climbing as address translations miss too: the first such plateau is the DRAM latency);
the first plateau is L1 when its sets are under 1 MiB; those between are L2.

**Stream figures.** Bytes are what the threads loaded; GB/s over the median launch time; per SM
divided by the blocks (one block an SM at most); bytes per cycle per SM from the cycles a block
took on its own SM's clock, so they do not depend on the clock the card ran at. The profiler's
columns are per warp-level load request: sectors (SW), tag look-ups (TW), data wavefronts, and the
L1's data bank conflicts; issue utilisation is the share of active cycles a warp scheduler issued
an instruction; instructions per float are thread instructions over the floats loaded.

Nothing here touches a GPU.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..records import KernelProfile, LatencyPoint, Microbench, StreamPoint
from .metrics import value

PLATEAU_TOLERANCE = 0.15
MIN_PLATEAU = 2
L1_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Level:
    name: str  # 'L1', 'L2', 'DRAM' (or 'L2 (i)' where the curve shows more than one step between)
    cycles: float  # median latency over the plateau, SM cycles
    ns: float
    first_bytes: int  # the smallest and largest working sets on the plateau
    last_bytes: int
    next_bytes: int | None  # the next size measured: the level's capacity is between last and next

    @property
    def capacity_words(self) -> str:
        if self.next_bytes is None:
            return f"at least {size_words(self.last_bytes)}"
        return f"between {size_words(self.last_bytes)} and {size_words(self.next_bytes)}"


def size_words(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


def plateaus(points: Sequence[tuple[int, float]], tolerance: float = PLATEAU_TOLERANCE,
             min_points: int = MIN_PLATEAU) -> list[list[int]]:
    """Indices (into ``points`` sorted by size) of each plateau of the latency curve, in size order."""
    order = sorted(range(len(points)), key=lambda i: points[i][0])
    groups: list[list[int]] = []
    for i in order:
        lat = points[i][1]
        if groups and lat <= min(points[j][1] for j in groups[-1]) * (1 + tolerance) \
                and lat >= min(points[j][1] for j in groups[-1]) * (1 - tolerance):
            groups[-1].append(i)
        else:
            groups.append([i])
    return [g for g in groups if len(g) >= min_points]


def levels(points: Sequence[LatencyPoint], l2_bytes: int | None) -> list[Level]:
    """The levels the latency curve shows (see the module's docstring)."""
    pts = sorted(points, key=lambda p: p.bytes)
    found = plateaus([(p.bytes, p.cycles) for p in pts])
    sizes = [p.bytes for p in pts]
    raw = []
    for g in found:
        on = [pts[i] for i in g]
        last = max(p.bytes for p in on)
        later = [s for s in sizes if s > last]
        raw.append((on, last, later[0] if later else None))
    names: list[str] = []
    for k, (on, last, _) in enumerate(raw):
        if k == 0 and last <= L1_MAX_BYTES:
            names.append("L1")
        elif l2_bytes and last > l2_bytes:  # it holds a set the L2 cannot
            names.append("DRAM")
        else:
            names.append("L2")
    # several plateaus beyond L2: the first is the memory's latency, the later ones add translation misses
    out: list[Level] = []
    seen_dram = False
    n_l2 = names.count("L2")
    l2_index = 0
    for (on, last, nxt), name in zip(raw, names, strict=True):
        if name == "DRAM":
            if seen_dram:
                name = "DRAM, larger sets"
            seen_dram = True
        elif name == "L2" and n_l2 > 1:
            l2_index += 1
            name = f"L2 ({l2_index})"
        out.append(Level(name=name, cycles=statistics.median(p.cycles for p in on),
                         ns=statistics.median(p.ns for p in on), first_bytes=min(p.bytes for p in on),
                         last_bytes=last, next_bytes=nxt))
    return out


def chase_clock_ghz(points: Sequence[LatencyPoint]) -> float | None:
    """The SM clock during the chase: cycles over nanoseconds, median over sizes."""
    ratios = [p.cycles / p.ns for p in points if p.ns > 0]
    return statistics.median(ratios) if ratios else None


# --------------------------------------------------------------------------- streams


@dataclass(frozen=True)
class StreamRow:
    point: StreamPoint
    ms: float
    gbps: float
    gbps_per_sm: float
    bytes_per_cycle_sm: float
    insts_per_float: float | None
    issue_pct: float | None
    sectors_per_request: float | None
    tags_per_request: float | None
    wavefronts_per_request: float | None
    conflicts_per_request: float | None
    l1_hit_pct: float | None
    l2_gbps: float | None
    dram_gbps: float | None


def _per(k: KernelProfile | None, num: str, den: str) -> float | None:
    if k is None:
        return None
    a, b = value(k, num), value(k, den)
    return a / b if a is not None and b else None


def _rate(k: KernelProfile | None, nbytes: float | None) -> float | None:
    if k is None or nbytes is None:
        return None
    ns = value(k, "gpu__time_duration.sum")
    return nbytes / ns if ns else None  # bytes per ns = GB/s


def stream_row(p: StreamPoint, sms: int) -> StreamRow:
    ms = statistics.median(p.samples_ms)
    gbps = p.bytes / (ms * 1e6)
    k = p.profile
    threads_inst = value(k, "smsp__thread_inst_executed.sum") if k else None
    sectors = value(k, "lts__t_sectors_srcunit_tex_op_read.sum") if k else None
    return StreamRow(
        point=p, ms=ms, gbps=gbps, gbps_per_sm=gbps / min(p.blocks, sms),
        bytes_per_cycle_sm=p.region_bytes * p.passes / p.block_cycles,
        insts_per_float=threads_inst / (p.bytes / 4) if threads_inst is not None else None,
        issue_pct=value(k, "smsp__issue_active.avg.pct_of_peak_sustained_active") if k else None,
        sectors_per_request=_per(k, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                                 "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
        tags_per_request=_per(k, "l1tex__t_set_accesses_pipe_lsu_mem_global_op_ld.sum",
                              "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
        wavefronts_per_request=_per(k, "l1tex__data_pipe_lsu_wavefronts_mem_lgds_cmd_read.sum",
                                    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
        conflicts_per_request=_per(k, "l1tex__data_bank_conflicts_pipe_lsu_cmd_read.sum",
                                   "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
        l1_hit_pct=value(k, "l1tex__t_sector_hit_rate.pct") if k else None,
        l2_gbps=_rate(k, sectors * 32 if sectors is not None else None),
        dram_gbps=_rate(k, value(k, "dram__bytes_read.sum") if k else None),
    )


def stream_rows(mb: Microbench) -> list[StreamRow]:
    return [stream_row(p, mb.device.sm_count) for p in mb.streams]


@dataclass(frozen=True)
class LevelCeiling:
    level: str
    gbps: float  # the whole GPU
    row: StreamRow  # the configuration that reached it

    @property
    def label(self) -> str:
        p = self.row.point
        return f"{self.level} stream, measured (V{p.vector}, {p.blocks} blocks)"


def level_ceilings(mb: Microbench) -> list[LevelCeiling]:
    """Each level's streaming ceiling: the fastest sequential (s0) row with the most blocks, whole GPU,
    fastest level first."""
    rows = stream_rows(mb)
    out = []
    for level in ("L1", "L2", "DRAM"):
        cands = [r for r in rows if r.point.level == level and r.point.pattern == "s0"]
        if not cands:
            continue
        most = max(r.point.blocks for r in cands)
        best = max((r for r in cands if r.point.blocks == most), key=lambda r: r.gbps)
        out.append(LevelCeiling(level, best.gbps, best))
    return out


# --------------------------------------------------------------------------- the device block


@dataclass(frozen=True)
class PeakRates:
    fp32_gflops: float | None  # a fused multiply-add counted as one operation, as the homework counts
    fp64_gflops: float | None
    comp_comm_fp32: float | None  # operations per 4-byte element the memory delivers
    comp_comm_fp64: float | None


def peak_rates(sm_count: int, clock_mhz: float | None, fp32_lanes: int | None, fp64_lanes: int | None,
               mem_gbps: float | None) -> PeakRates:
    """The homework's PEAK and COMP/COMM lines: lanes × SMs × clock, FMA as one operation; the ratio
    in operations per element (4 bytes for fp32, 8 for fp64) the off-chip bandwidth delivers."""
    def rate(lanes: int | None) -> float | None:
        return lanes * sm_count * clock_mhz / 1e3 if lanes and clock_mhz else None

    sp, dp = rate(fp32_lanes), rate(fp64_lanes)
    return PeakRates(sp, dp, sp / (mem_gbps / 4) if sp and mem_gbps else None,
                     dp / (mem_gbps / 8) if dp and mem_gbps else None)
