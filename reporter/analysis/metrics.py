"""Nsight Compute metrics: the figures that follow from a profile's values (the names, and which
ones the harness requests, are :mod:`reporter.ncu_metrics`).

Everything here works on :class:`~reporter.records.Profile` records and imports nothing that
needs a GPU, so the report (and ``report show``) can print a profile taken elsewhere.

Units: the parser stores every value in ncu's base units (time in ``ns``, sizes in ``byte``,
rates per ``second``), whatever scaling ncu printed, so the figures below never guess.

Where the numbers come from (Hopper names; each is checked against ``ncu --query-metrics
--chip gh100`` in the tests):

* executed floating-point work: the SASS thread-instruction counters
  ``smsp__sass_thread_inst_executed_op_{d,f,h}{add,mul,fma}_pred_on.sum``, an FMA counting as
  two flops. Packed half instructions (HFMA2/HADD2/HMUL2) count once per thread instruction,
  so fp16 CUDA-core work may be under-counted by up to 2×; tensor cores are counted apart.
* tensor-core work: ``sm__ops_path_tensor_src_<type>.sum``, the math operations the tensor
  path executed by source type. :data:`TENSOR_FLOPS_PER_OP` converts them to flops; it is
  checked against an fp16 4096³ ``torch.matmul`` fixture (2·4096³ flops) in the tests.
* bytes at each memory level: ``dram__bytes.sum`` (DRAM), ``lts__t_bytes.sum`` (L2 requests),
  ``l1tex__t_bytes.sum`` (L1/TEX requests).
* the profiler's bandwidth peaks, the way Nsight Compute's own hierarchical roofline
  sections draw them: ``<level bytes>.sum.peak_sustained`` (bytes per cycle, summed over
  units) × ``<unit>__cycles_elapsed.avg.per_second`` (that unit's clock during the kernel;
  with ``--clock-control none`` these are the clocks the kernel really ran at). The fp32
  CUDA-core peak is ``2 × sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained
  × sm__cycles_elapsed.avg.per_second``. Tensor-core roofs come from the measured matmul
  ceilings (``logs/devices/``), not from ncu.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..ncu_metrics import (  # the vocabulary: names the records use
    DURATION,
    FLOP_INSTRUCTIONS,
    FP32_PEAK,
    GLOBAL_LD_BYTES,
    GLOBAL_LD_REQUESTS,
    GLOBAL_LD_SECTORS,
    GLOBAL_ST_BYTES,
    GLOBAL_ST_REQUESTS,
    GLOBAL_ST_SECTORS,
    INST_EXECUTED,
    ISSUE_ACTIVE_PCT,
    L1_TO_L2,
    L2_TO_L1,
    LSU_READ_CONFLICTS,
    LEVEL_BYTES,
    LEVEL_PEAK,
    SECTOR_BYTES,
    SHARED_CONFLICTS,
    SHARED_REQUESTS,
    SHARED_WAVEFRONTS,
    SM_ACTIVE_CYCLES_AVG,
    SM_ACTIVE_CYCLES_MAX,
    TENSOR_FLOPS_PER_OP,
    TENSOR_OPS,
    THREAD_INST_EXECUTED,
)
from ..records import KernelProfile, Profile, WorkModel

# --------------------------------------------------------------------------- reading values


def value(kernel: KernelProfile, name: str) -> float | None:
    """A numeric metric of one kernel, or None when absent or not a number."""
    m = kernel.metrics.get(name)
    if m is None or isinstance(m.value, str):
        return None
    v = float(m.value)
    return v if math.isfinite(v) else None


def total(kernels: Sequence[KernelProfile], name: str) -> float | None:
    """A counter summed over kernels; None when no kernel has it."""
    vals = [v for k in kernels if (v := value(k, name)) is not None]
    return sum(vals) if vals else None


def duration_ns(kernels: Sequence[KernelProfile]) -> float | None:
    return total(kernels, DURATION)


def weighted_pct(kernels: Sequence[KernelProfile], name: str) -> float | None:
    """A percentage averaged over kernels weighted by their duration (a short helper kernel
    must not count as much as the main one); unweighted when durations are missing."""
    pairs = [(v, value(k, DURATION)) for k in kernels if (v := value(k, name)) is not None]
    if not pairs:
        return None
    weighted = [(v, w) for v, w in pairs if w is not None and w > 0]
    if len(weighted) == len(pairs):
        return sum(v * w for v, w in weighted) / sum(w for _, w in weighted)
    return sum(v for v, _ in pairs) / len(pairs)


def _sum_of(kernels: Sequence[KernelProfile], names: Iterable[str]) -> float | None:
    vals = [t for n in names if (t := total(kernels, n)) is not None]
    return sum(vals) if vals else None


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den <= 0:
        return None
    return num / den


def _median(xs: list[float]) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


# --------------------------------------------------------------------------- derived figures


@dataclass(frozen=True)
class Figures:
    """What follows from a set of kernels' metrics (one kernel, or all of a profile)."""

    duration_ns: float | None
    flops_by_class: dict[str, float]  # 'fp64', 'fp32', 'fp16' (CUDA cores), 'tensor'
    bytes_by_level: dict[str, float]  # 'DRAM', 'L2', 'L1'
    peak_gbps_by_level: dict[str, float]  # from ncu's peak_sustained × clock
    fp32_peak_tflops: float | None
    global_ld_sectors_per_request: float | None
    global_ld_ideal_sectors_per_request: float | None
    global_st_sectors_per_request: float | None
    global_st_ideal_sectors_per_request: float | None
    shared_bank_conflicts: float | None
    shared_requests: float | None
    shared_wavefronts: float | None
    l2_to_l1_bytes: float | None
    l2_to_l1_over_ideal: float | None  # 1.0 = the work model's bytes crossed L2→L1 once
    inst_executed: float | None
    inst_per_work_unit: float | None  # per flop, or per byte for copy-bound work
    work_unit: str  # 'flop' or 'byte'

    @property
    def flops(self) -> float:
        return sum(self.flops_by_class.values())

    @property
    def tensor_share(self) -> float | None:
        return self.flops_by_class.get("tensor", 0.0) / self.flops if self.flops > 0 else None

    @property
    def bank_conflicts_per_request(self) -> float | None:
        return _ratio(self.shared_bank_conflicts, self.shared_requests)

    @property
    def ld_coalescing(self) -> float | None:
        """Ideal sectors over sectors moved for global loads (1.0 = perfectly coalesced)."""
        return _ratio(self.global_ld_ideal_sectors_per_request, self.global_ld_sectors_per_request)


def executed_flops(kernels: Sequence[KernelProfile]) -> dict[str, float]:
    """Flops by class; a class appears only when its counters were collected."""
    out: dict[str, float] = {}
    for cls, (add, mul, fma) in FLOP_INSTRUCTIONS.items():
        parts = [total(kernels, add), total(kernels, mul), total(kernels, fma)]
        if any(p is not None for p in parts):
            a, m, f = (p or 0.0 for p in parts)
            out[cls] = a + m + 2.0 * f
    tensor_ops = _sum_of(kernels, TENSOR_OPS.values())
    if tensor_ops is not None:
        out["tensor"] = tensor_ops * TENSOR_FLOPS_PER_OP
    return out


def peak_gbps(kernels: Sequence[KernelProfile]) -> dict[str, float]:
    """Each level's bandwidth peak in GB/s: the median over kernels of bytes/cycle × clock."""
    out: dict[str, float] = {}
    for level, (per_cycle, clock) in LEVEL_PEAK.items():
        vals = [bpc * hz / 1e9 for k in kernels
                if (bpc := value(k, per_cycle)) is not None and (hz := value(k, clock)) is not None and bpc * hz > 0]
        if (med := _median(vals)) is not None:
            out[level] = med
    return out


def fp32_peak_tflops(kernels: Sequence[KernelProfile]) -> float | None:
    per_cycle, clock = FP32_PEAK
    vals = [2.0 * ipc * hz / 1e12 for k in kernels
            if (ipc := value(k, per_cycle)) is not None and (hz := value(k, clock)) is not None and ipc * hz > 0]
    return _median(vals)


def _per_request(kernels: Sequence[KernelProfile], sectors: str, requests: str,
                 data_bytes: str) -> tuple[float | None, float | None]:
    req = total(kernels, requests)
    actual = _ratio(total(kernels, sectors), req)
    needed = total(kernels, data_bytes)
    # the fewest sectors the requested bytes could touch: what a fully coalesced access moves
    ideal = _ratio(needed / SECTOR_BYTES, req) if needed is not None else None
    return actual, ideal


def figures(kernels: Sequence[KernelProfile], work: WorkModel | None = None) -> Figures:
    flops = executed_flops(kernels)
    levels = {lvl: b for lvl, name in LEVEL_BYTES.items() if (b := total(kernels, name)) is not None}
    ld_actual, ld_ideal = _per_request(kernels, GLOBAL_LD_SECTORS, GLOBAL_LD_REQUESTS, GLOBAL_LD_BYTES)
    st_actual, st_ideal = _per_request(kernels, GLOBAL_ST_SECTORS, GLOBAL_ST_REQUESTS, GLOBAL_ST_BYTES)
    l2_l1 = total(kernels, L2_TO_L1)
    inst = total(kernels, INST_EXECUTED)
    unit = "byte" if work is not None and work.ceiling == "copy" else "flop"
    # per unit of the work the problem needs (the model); the executed flops without a model
    per: float | None = (work.bytes if unit == "byte" else work.flops) if work is not None else sum(flops.values())
    return Figures(
        duration_ns=duration_ns(kernels),
        flops_by_class=flops,
        bytes_by_level=levels,
        peak_gbps_by_level=peak_gbps(kernels),
        fp32_peak_tflops=fp32_peak_tflops(kernels),
        global_ld_sectors_per_request=ld_actual,
        global_ld_ideal_sectors_per_request=ld_ideal,
        global_st_sectors_per_request=st_actual,
        global_st_ideal_sectors_per_request=st_ideal,
        shared_bank_conflicts=_sum_of(kernels, SHARED_CONFLICTS),
        shared_requests=_sum_of(kernels, SHARED_REQUESTS),
        shared_wavefronts=_sum_of(kernels, SHARED_WAVEFRONTS),
        l2_to_l1_bytes=l2_l1,
        l2_to_l1_over_ideal=_ratio(l2_l1, work.bytes) if work is not None else None,
        inst_executed=inst,
        inst_per_work_unit=_ratio(inst, per),
        work_unit=unit,
    )


def profile_figures(profile: Profile | None, work: WorkModel | None = None) -> Figures | None:
    """Figures of all kernels of a profile taken successfully; None otherwise."""
    if profile is None or profile.status != "ok" or not profile.kernels:
        return None
    return figures(profile.kernels, work)


# --------------------------------------------------------------------------- the LSU EE 7722 columns


@dataclass(frozen=True)
class HomeworkFigures:
    """The columns of the LSU EE 7722 homework's per-launch line (hw02), from one profile:

    * ``insts_per_iteration`` (/itr): thread instructions per multiply-add of the work model (flops / 2),
      the homework's instructions per iteration of the problem's multiply-add loop;
    * ``issue_pct`` (%): cycles a warp scheduler issued an instruction, of its active cycles;
    * ``sectors_per_request`` (SW): sectors per global load request;
    * ``conflicts_per_load`` (BXW): L1 data bank conflicts of loads per load request (global and shared);
    * ``norm_read`` / ``norm_write`` (N-Rd, N-Wr): bytes from L2 into L1 over the inputs' bytes, and
      bytes from L1 to L2 over the output's (the work model's ``bytes_read`` and the rest);
    * ``l1_l2_gbps``: bytes between L1 and L2, both ways, over the profiled duration;
    * ``imbalance_pct`` (Imb): how much longer the busiest SM was active than the average SM (of the
      profile's least balanced kernel).
    """

    insts_per_iteration: float | None
    issue_pct: float | None
    sectors_per_request: float | None
    conflicts_per_load: float | None
    norm_read: float | None
    norm_write: float | None
    l1_l2_gbps: float | None
    imbalance_pct: float | None


def homework_figures(kernels: Sequence[KernelProfile], work: WorkModel | None) -> HomeworkFigures:
    fmas = work.flops / 2 if work is not None and (work.flops or 0) > 0 else None
    loads = _sum_of(kernels, (GLOBAL_LD_REQUESTS, SHARED_REQUESTS[0]))
    read, written = total(kernels, L2_TO_L1), total(kernels, L1_TO_L2)
    ns = duration_ns(kernels)
    out_bytes = work.bytes - work.bytes_read if work is not None and work.bytes_read is not None else None
    # each kernel's busiest SM over its mean SM; the profile's figure is its worst kernel's
    imb = [(mx / avg - 1.0) * 100.0 for k in kernels
           if (mx := value(k, SM_ACTIVE_CYCLES_MAX)) is not None and (avg := value(k, SM_ACTIVE_CYCLES_AVG))]
    return HomeworkFigures(
        insts_per_iteration=_ratio(total(kernels, THREAD_INST_EXECUTED), fmas),
        issue_pct=weighted_pct(kernels, ISSUE_ACTIVE_PCT),
        sectors_per_request=_ratio(total(kernels, GLOBAL_LD_SECTORS), total(kernels, GLOBAL_LD_REQUESTS)),
        conflicts_per_load=_ratio(total(kernels, LSU_READ_CONFLICTS), loads),
        norm_read=_ratio(read, work.bytes_read if work is not None else None),
        norm_write=_ratio(written, out_bytes),
        l1_l2_gbps=_ratio((read or 0.0) + (written or 0.0), ns) if read is not None or written is not None else None,
        imbalance_pct=max(imb) if imb else None,
    )


# --------------------------------------------------------------------------- formatting


def format_duration_ns(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


def format_bytes(n: float) -> str:
    # decimal prefixes, as ncu prints them
    for scale, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


def format_count(n: float) -> str:
    return f"{n:,.0f}" if float(n).is_integer() or abs(n) >= 1000 else f"{n:.3g}"


def format_value(v: float | str, unit: str) -> str:
    """ns → us/ms, bytes → KB/MB/GB, percentages with '%', rates scaled, counts with separators."""
    if isinstance(v, str):
        return v
    u = unit.lower()
    if u in ("ns", "nsecond"):
        return format_duration_ns(v)
    if u == "byte":
        return format_bytes(v)
    if u == "%":
        return f"{v:.2f} %"
    if u in ("byte/second", "byte/s"):
        return f"{v / 1e9:,.1f} GB/s"
    if u in ("cycle/second", "hz"):
        return f"{v / 1e9:.3f} GHz"
    return f"{format_count(v)} {unit}".rstrip()
