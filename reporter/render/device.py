"""A device as a course's ``mb`` prints it (LSU EE 7722): the device block, the latency table with the
levels its knees show, and the streaming table, as plain lines and cells that the terminal (``report
device``) and the report's appendix both print. The figures come from :mod:`reporter.analysis.microbench`."""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.microbench import Level, StreamRow, chase_clock_ghz, levels, peak_rates, size_words, stream_rows
from ..records import DeviceCeilings, DeviceInfo, DeviceLimits, Microbench


def memory_gbps(info: DeviceInfo, limits: DeviceLimits) -> float | None:
    """The off-chip bandwidth the part is built for: memory clock × 2 (double data rate) × bus width."""
    if info.memory_clock_max_mhz and limits.memory_bus_bits:
        return info.memory_clock_max_mhz * 2 * limits.memory_bus_bits / 8 / 1e3
    return None


def device_block(info: DeviceInfo, limits: DeviceLimits, ceilings: DeviceCeilings | None = None) -> list[str]:
    """The five lines of ``mb``'s device block, and where our own ceilings were measured a sixth."""
    clock = f"{info.sm_clock_max_mhz / 1e3:.2f} GHz" if info.sm_clock_max_mhz else "? GHz"
    mem = memory_gbps(info, limits)
    peaks = peak_rates(info.sm_count, info.sm_clock_max_mhz, limits.fp32_lanes_per_sm, limits.fp64_lanes_per_sm, mem)

    def num(x: float | None, fmt: str) -> str:
        return format(x, fmt) if x is not None else "?"

    lines = [
        f"{info.name} @ {clock} WITH {info.memory_bytes >> 20} MiB GLOBAL MEM",
        f"L2: {info.l2_bytes >> 10} kiB    MEM<->L2: {num(mem, '.1f')} GB/s",
        f"CC: {info.compute_capability}  SM: {info.sm_count}  SP-FP32/SM: {limits.fp32_lanes_per_sm or '?'}  "
        f"DP-FP64/SM: {limits.fp64_lanes_per_sm or '?'}  TH/BL: {limits.max_threads_per_block}",
        f"SHARED: {limits.shared_bytes_per_block} B/BL ({limits.shared_bytes_per_block_optin} opted in)  "
        f"{limits.shared_bytes_per_sm} B/SM  CONST: {limits.const_bytes} B  # REGS: {limits.registers_per_block}",
        f"PEAK: {num(peaks.fp32_gflops, '.0f')} SP GFLOPS  {num(peaks.fp64_gflops, '.0f')} DP GFLOPS  "
        f"COMP/COMM: {num(peaks.comp_comm_fp32, '.1f')} SP  {num(peaks.comp_comm_fp64, '.1f')} DP",
    ]
    if ceilings is not None:
        lines.append(f"MEASURED: copy {ceilings.copy_gbps:,.0f} GB/s; "
                     + ", ".join(f"{k} matmul {v:,.0f} TFLOP/s" for k, v in ceilings.matmul_tflops.items()))
    return lines


LATENCY_HEADERS = ("working set", "cycles", "ns", "level")


def latency_cells(mb: Microbench) -> list[tuple[str, str, str, str]]:
    found = levels(mb.latency, mb.device.l2_bytes)
    rows = []
    for p in sorted(mb.latency, key=lambda p: p.bytes):
        on = next((lv.name for lv in found if lv.first_bytes <= p.bytes <= lv.last_bytes), "")
        rows.append((size_words(p.bytes), f"{p.cycles:.0f}", f"{p.ns:.0f}", on))
    return rows


def level_sentences(mb: Microbench) -> list[str]:
    """One line a level: its latency and its capacity bracket, as the knees of the curve put them."""
    out = []
    for lv in levels(mb.latency, mb.device.l2_bytes):
        what = (f"{lv.name}: {lv.cycles:.0f} cycles ({lv.ns:.0f} ns) a load for sets of "
                f"{size_words(lv.first_bytes)} to {size_words(lv.last_bytes)}")
        if lv.name.startswith("DRAM"):
            out.append(what)
        else:
            out.append(f"{what}; capacity {lv.capacity_words}")
    ghz = chase_clock_ghz(mb.latency)
    if ghz:
        out.append(f"SM clock during the chase: {ghz:.2f} GHz (cycles over nanoseconds)")
    return out


STREAM_HEADERS = ("Lv", "Blk", "V", "SPL", "µs", "/float", "issue %", "SW", "TW", "wavefr.", "BXW", "B/cyc/SM",
                  "GB/s /SM", "GB/s", "L2→L1 GB/s", "DRAM GB/s")


def _f(x: float | None, fmt: str) -> str:
    return format(x, fmt) if x is not None else "–"


def stream_cells(row: StreamRow) -> tuple[str, ...]:
    p = row.point
    return (p.level, str(p.blocks), str(p.vector), p.pattern, f"{row.ms * 1e3:.0f}", _f(row.insts_per_float, ".2f"),
            _f(row.issue_pct, ".0f"), _f(row.sectors_per_request, ".1f"), _f(row.tags_per_request, ".1f"),
            _f(row.wavefronts_per_request, ".1f"), _f(row.conflicts_per_request, ".1f"),
            f"{row.bytes_per_cycle_sm:.1f}", f"{row.gbps_per_sm:.1f}", f"{row.gbps:,.0f}",
            _f(row.l2_gbps, ",.0f"), _f(row.dram_gbps, ",.0f"))


@dataclass(frozen=True)
class DeviceView:
    """Everything of one micro-benchmark record a reader sees."""

    record: Microbench
    block: list[str]
    levels: list[Level]
    level_lines: list[str]
    latency: list[tuple[str, str, str, str]]
    streams: list[tuple[str, ...]]


def device_view(mb: Microbench, ceilings: DeviceCeilings | None = None) -> DeviceView:
    return DeviceView(record=mb, block=device_block(mb.device, mb.limits, ceilings),
                      levels=levels(mb.latency, mb.device.l2_bytes), level_lines=level_sentences(mb),
                      latency=latency_cells(mb), streams=[stream_cells(r) for r in stream_rows(mb)])


STREAM_KEY = ("Lv: the level the footprint is sized for; Blk: blocks of 1024 threads; V: floats a load; SPL: s<i>, "
              "lane τ loads vector τ·2^i; p<i>, the lane in the low five bits and 2^i lines a warp. /float: thread "
              "instructions per float loaded; issue %: active cycles a scheduler issued; SW, TW: sectors and tag "
              "look-ups per load request; wavefr.: L1 data wavefronts per request; BXW: L1 data bank conflicts per "
              "request; B/cyc/SM: bytes loaded per SM cycle (the block's own clock); GB/s: bytes the threads "
              "loaded, over the median launch; L2→L1 and DRAM: the profiler's bytes over its launch's time.")
