"""Probe: where the matmul fp32 kernels' warps wait, against cuBLAS's, at N = 4096 (issue 32).

Runs itself under Nsight Compute (``--clock-control none``, the profiled range only: one call each
of matmul v17, cuBLAS through ``torch.matmul`` with TF32 off, v21 and v22, after warm-up calls) and
writes a probe record (:mod:`reporter.harness.probe`) whose data is, per kernel, the issued
instructions, the FMAs, the shared-memory bank conflicts and the average number of warps stalled
for each reason per issued instruction (``smsp__average_warps_issue_stalled_*_per_issue_active``);
ncu's raw CSV is attached. On the GPU node, from the repository root::

    python3 tools/matmul_stall_probe.py

``--versions a,b,...`` profiles those versions instead (the first before cuBLAS, the rest after it),
``--name NAME`` names the probe record (default ``matmul_fp32_stalls``).
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSIONS = ("v17_unguarded_loop", "v21_cp_async_ring", "v22_fma_order")
STALLS = ("barrier", "branch_resolving", "dispatch_stall", "long_scoreboard", "math_pipe_throttle", "mio_throttle",
          "no_instruction", "not_selected", "selected", "short_scoreboard", "wait", "lg_throttle", "drain")
METRICS = [f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio" for s in STALLS] + [
    "smsp__inst_executed.sum", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__issue_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread", "launch__grid_size",
    "gpu__time_duration.sum"]


def _arg(flag: str, default: str) -> str:
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else default


def _versions() -> tuple[str, ...]:
    return tuple(_arg("--versions", ",".join(VERSIONS)).split(","))


def workload() -> None:
    """The profiled calls (run by ncu): warm-ups outside the range, then one call of each."""
    import torch

    sys.path[:0] = [str(ROOT), str(ROOT / "kernels" / "matmul")]
    import importlib

    import assignment as mm

    torch.backends.cuda.matmul.allow_tf32 = False
    mods = [importlib.import_module(v) for v in _versions()]
    data = mm.generate_input(**mm.CASES["benchmark"])
    calls = [lambda: mods[0].custom_kernel(data), lambda: torch.matmul(data[0], data[1])] + [
        (lambda m=m: m.custom_kernel(data)) for m in mods[1:]]
    for _ in range(5):
        for call in calls:
            call()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for call in calls:
        call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from reporter.harness.probe import ProbeSession

    sys.path.insert(0, str(ROOT / "kernels" / "matmul"))
    import importlib

    versions = _versions()
    for v in versions:  # imported here too, so that the record's code closure names what the workload ran
        importlib.import_module(v)
    session = ProbeSession(_arg("--name", "matmul_fp32_stalls"), __file__)
    cmd = ["ncu", "--clock-control", "none", "--profile-from-start", "off", "--metrics", ",".join(METRICS),
           "--csv", "--page", "raw", sys.executable, __file__, "--workload", "--versions", ",".join(versions)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    text = out.stdout[out.stdout.index('"ID"'):]
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    kernels: dict[str, dict[str, float]] = {}
    for r in rows[2:]:
        if len(r) < len(header):
            continue
        name = r[header.index("Kernel Name")]
        kernels[name] = {m: float(r[header.index(m)].replace(",", "")) for m in METRICS if m in header}
    path = session.write({"case": "benchmark", "n": 4096, "dtype": "float32", "kernels": kernels}, description=(
        f"Nsight Compute (--clock-control none) on one call each of matmul {versions[0]}, cuBLAS fp32 (torch.matmul, "
        f"TF32 off), {', '.join(versions[1:])} at N = 4096: issued instructions, FMAs, bank conflicts, registers "
        "and the warps stalled per issued instruction by reason."), attachments={"ncu_raw.csv": text.encode()})
    for name, m in kernels.items():
        print(f"{name[:48]:48} inst {m['smsp__inst_executed.sum']:.4g} issue% "
              f"{m['smsp__issue_active.avg.pct_of_peak_sustained_active']:.1f} dispatch "
              f"{m[METRICS[STALLS.index('dispatch_stall')]]:.2f} short_sb {m[METRICS[STALLS.index('short_scoreboard')]]:.2f} "
              f"lg_throttle {m.get(METRICS[STALLS.index('lg_throttle')], float('nan')):.2f} "
              f"long_sb {m[METRICS[STALLS.index('long_scoreboard')]]:.2f} barrier {m[METRICS[STALLS.index('barrier')]]:.2f}")
    print(f"probe record: {path}")


if __name__ == "__main__":
    workload() if "--workload" in sys.argv else main()
