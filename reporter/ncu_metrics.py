"""The Nsight Compute metrics the records speak of: their names (Hopper's), the CS149 profile block,
what the harness asks ncu for (:data:`PROFILE_METRICS`, :data:`LAUNCH_METRICS`), and a check of a
name against ``ncu --query-metrics``.

One vocabulary, below the layers that use it: the harness requests these names, the records keep
what ncu returned under them, and :mod:`reporter.analysis.metrics` turns them into figures (its
docstring says where each number comes from). Every name here is checked against
``ncu --query-metrics --chip gh100`` in the tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# --------------------------------------------------------------------------- the CS149 block

#: The Stanford CS149 profile block: (label, metric), printed in this order.
CS149_BLOCK: tuple[tuple[str, str], ...] = (
    ("Duration", "gpu__time_duration.sum"),
    ("Compute_Throughput", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("SM_Busy", "sm__instruction_throughput.avg.pct_of_peak_sustained_active"),
    ("L1_Cache_Throughput", "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("L2_Cache_Throughput", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("DRAM_Throughput", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
    ("L1_Cache_Hit_Rate", "l1tex__t_sector_hit_rate.pct"),
    ("L2_Cache_Hit_Rate", "lts__t_sector_hit_rate.pct"),
    ("DRAM_Read", "dram__bytes_read.sum"),
    ("DRAM_Write", "dram__bytes_write.sum"),
    ("L2_to_L1_Traffic", "l1tex__m_xbar2l1tex_read_bytes.sum"),
    ("L1_to_L2_Traffic", "l1tex__m_l1tex2xbar_write_bytes.sum"),
    ("L2_to_SHMEM_Traffic", "sm__sass_l1tex_m_xbar2l1tex_read_bytes_mem_global_op_ldgsts_cache_bypass.sum"),
)
LABEL_TO_METRIC: dict[str, str] = dict(CS149_BLOCK)

DURATION = "gpu__time_duration.sum"
COMPUTE_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
L1_PCT = "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"
L2_PCT = "lts__throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_PCT = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
L1_HIT_PCT = "l1tex__t_sector_hit_rate.pct"
L2_HIT_PCT = "lts__t_sector_hit_rate.pct"
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
L2_TO_L1 = "l1tex__m_xbar2l1tex_read_bytes.sum"

# --------------------------------------------------------------------------- roofline counters

#: flop class -> (add, mul, fma) thread-instruction counters; an FMA is two flops.
FLOP_INSTRUCTIONS: dict[str, tuple[str, str, str]] = {
    p: tuple(f"smsp__sass_thread_inst_executed_op_{c}{op}_pred_on.sum" for op in ("add", "mul", "fma"))  # type: ignore[misc]
    for p, c in (("fp64", "d"), ("fp32", "f"), ("fp16", "h"))
}

#: tensor-path source type -> ops counter (Hopper: HMMA and HGMMA together).
TENSOR_OPS: dict[str, str] = {
    "fp16": "sm__ops_path_tensor_src_fp16.sum",
    "bf16": "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "tf32": "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "fp8": "sm__ops_path_tensor_src_fp8.sum",
    "fp64": "sm__ops_path_tensor_src_fp64.sum",
}
#: flops per counted tensor-path op: the counter already counts a multiply-add as two
#: operations (checked on the fp16 4096³ matmul fixture: ops = 2·4096³).
TENSOR_FLOPS_PER_OP = 1.0
#: warp-level tensor instructions, kept for reference (their flops depend on the MMA shape).
TENSOR_INST = "sm__inst_executed_pipe_tensor.sum"

LEVELS: tuple[str, ...] = ("DRAM", "L2", "L1")
LEVEL_BYTES: dict[str, str] = {"DRAM": "dram__bytes.sum", "L2": "lts__t_bytes.sum", "L1": "l1tex__t_bytes.sum"}
#: level -> (bytes per cycle at peak, that unit's clock in cycles per second)
LEVEL_PEAK: dict[str, tuple[str, str]] = {
    "DRAM": ("dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second"),
    "L2": ("lts__t_bytes.sum.peak_sustained", "lts__cycles_elapsed.avg.per_second"),
    "L1": ("l1tex__t_bytes.sum.peak_sustained", "l1tex__cycles_elapsed.avg.per_second"),
}
FP32_PEAK: tuple[str, str] = ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
                              "sm__cycles_elapsed.avg.per_second")

# --------------------------------------------------------------------------- access patterns

GLOBAL_LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
GLOBAL_LD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
GLOBAL_LD_BYTES = "sm__sass_data_bytes_mem_global_op_ld.sum"  # bytes the threads asked for
GLOBAL_ST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
GLOBAL_ST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
GLOBAL_ST_BYTES = "sm__sass_data_bytes_mem_global_op_st.sum"
SHARED_CONFLICTS = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")
SHARED_WAVEFRONTS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                     "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum")
SHARED_REQUESTS = ("smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_st.sum")
INST_EXECUTED = "smsp__inst_executed.sum"
SECTOR_BYTES = 32

# --------------------------------------------------------------------------- the LSU EE 7722 columns

THREAD_INST_EXECUTED = "smsp__thread_inst_executed.sum"  # thread-level: a warp instruction counts its active lanes
ISSUE_ACTIVE_PCT = "smsp__issue_active.avg.pct_of_peak_sustained_active"  # cycles a scheduler issued, of active ones
SM_ACTIVE_CYCLES_MAX = "sm__cycles_active.max"
SM_ACTIVE_CYCLES_AVG = "sm__cycles_active.avg"
LSU_READ_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_cmd_read.sum"  # L1 data bank conflicts of loads, any space
L1_TO_L2 = "l1tex__m_l1tex2xbar_write_bytes.sum"


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


#: Every metric the harness asks ncu for (one ``--metrics`` list).
PROFILE_METRICS: tuple[str, ...] = _unique([
    *(m for _, m in CS149_BLOCK),
    *(m for triple in FLOP_INSTRUCTIONS.values() for m in triple),
    *TENSOR_OPS.values(), TENSOR_INST,
    *LEVEL_BYTES.values(),
    *(m for pair in LEVEL_PEAK.values() for m in pair), *FP32_PEAK,
    GLOBAL_LD_SECTORS, GLOBAL_LD_REQUESTS, GLOBAL_LD_BYTES,
    GLOBAL_ST_SECTORS, GLOBAL_ST_REQUESTS, GLOBAL_ST_BYTES,
    *SHARED_CONFLICTS, *SHARED_WAVEFRONTS, *SHARED_REQUESTS,
    INST_EXECUTED,
    THREAD_INST_EXECUTED, ISSUE_ACTIVE_PCT, SM_ACTIVE_CYCLES_MAX, SM_ACTIVE_CYCLES_AVG, LSU_READ_CONFLICTS,
])

#: Launch statistics ncu adds to every raw page unasked; these few are kept in the records
#: (the rest, device attributes and rollups nobody asked for, are dropped).
LAUNCH_METRICS: tuple[str, ...] = (
    "launch__grid_size", "launch__block_size", "launch__thread_count", "launch__registers_per_thread",
    "launch__shared_mem_per_block", "launch__waves_per_multiprocessor", "launch__occupancy_limit_blocks",
    "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps",
    "sm__maximum_warps_per_active_cycle_pct", "profiler__replayer_passes",
)

# --------------------------------------------------------------------------- metric catalogue

_METRIC_TYPES = ("Counter", "Ratio", "Throughput")
_ROLLUPS = ("sum", "avg", "min", "max")
_COUNTER_SUBMETRICS = {
    "peak_sustained", "peak_sustained_active", "peak_sustained_elapsed", "peak_sustained_region",
    "peak_sustained_frame", "per_second", "per_cycle_active", "per_cycle_elapsed", "per_cycle_in_region",
    "per_cycle_in_frame", "pct_of_peak_sustained_active", "pct_of_peak_sustained_elapsed",
    "pct_of_peak_sustained_region", "pct_of_peak_sustained_frame",
}
_RATIO_SUFFIXES = {"pct", "ratio", "max_rate"}
_LINE = re.compile(r"^([a-z0-9_]+__[a-z0-9_]+)\s+(Counter|Ratio|Throughput)\b")


def parse_query_metrics(text: str) -> dict[str, str]:
    """``ncu --query-metrics --chip <chip>`` output → {base metric name: type}.

    Lines of other collection configurations (``X.TriageCompute.name``) are left out: those
    are not the names ``--metrics`` takes."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            out.setdefault(m.group(1), m.group(2))
    return out


def metric_problem(name: str, catalog: dict[str, str]) -> str | None:
    """Why ncu would refuse a full metric name (base.rollup[.submetric]), or None if fine."""
    base, _, suffix = name.partition(".")
    kind = catalog.get(base)
    if kind is None:
        return f"{name}: no metric '{base}' on this chip"
    parts = suffix.split(".") if suffix else []
    if kind == "Ratio":
        if len(parts) != 1 or parts[0] not in _RATIO_SUFFIXES:
            return f"{name}: a ratio takes .pct, .ratio or .max_rate"
        return None
    if not parts or parts[0] not in _ROLLUPS or len(parts) > 2:
        return f"{name}: a {kind.lower()} takes .sum/.avg/.min/.max and at most one submetric"
    if len(parts) == 2 and parts[1] not in _COUNTER_SUBMETRICS:
        return f"{name}: unknown submetric '{parts[1]}'"
    return None
