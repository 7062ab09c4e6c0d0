"""Probe: where flashattn's warps wait, version against version, on one case (issue 35).

Runs itself under Nsight Compute (``--clock-control none``, the profiled range only: one call of each
version, in the order given, after warm-up calls of all of them) and writes a probe record
(:mod:`reporter.harness.probe`) whose data is, per version, its kernel's issued instructions, active
cycles, SM clock, duration, issue rate and the average number of warps stalled for each reason per
issued instruction (``smsp__average_warps_issue_stalled_*_per_issue_active``); ncu's raw CSV is attached.
The versions' kernels may share a name (v24 builds v15's kernel), so the rows are taken in launch order,
one kernel a call. On the GPU node, from the repository root::

    python3 tools/attn_stall_probe.py --versions v16_launch_plan,v25_sums_under_s --case benchmark --name NAME
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STALLS = ("barrier", "branch_resolving", "dispatch_stall", "long_scoreboard", "math_pipe_throttle", "mio_throttle",
          "no_instruction", "not_selected", "selected", "short_scoreboard", "wait", "lg_throttle", "drain", "membar",
          "sleeping", "tex_throttle", "imc_miss", "misc")
METRICS = [f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio" for s in STALLS] + [
    "smsp__inst_executed.sum", "smsp__issue_active.avg.pct_of_peak_sustained_active", "sm__cycles_active.avg",
    "gpc__cycles_elapsed.avg.per_second", "launch__registers_per_thread", "launch__grid_size", "gpu__time_duration.sum"]


def _arg(flag: str, default: str) -> str:
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else default


def _versions() -> list[str]:
    return _arg("--versions", "v16_launch_plan,v25_sums_under_s").split(",")


def rows_by_version(text: str, versions: list[str]) -> dict[str, dict[str, float | str]]:
    """ncu's raw CSV page (header, units row, one row a profiled kernel) as {version: {metric: value,
    "kernel_name": its kernel}}: the i-th kernel is the i-th version's, since each version's call launches
    one kernel and versions may share a kernel's name. Any other count of kernels is an error."""
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    launches = [r for r in rows[2:] if len(r) >= len(header)]
    if len(launches) != len(versions):
        raise ValueError(f"expected one kernel a version ({len(versions)}), ncu profiled {len(launches)}")
    kernels: dict[str, dict[str, float | str]] = {}
    for v, r in zip(versions, launches):
        row: dict[str, float | str] = {m: float(r[header.index(m)].replace(",", "")) for m in METRICS
                                       if m in header and r[header.index(m)]}
        row["kernel_name"] = r[header.index("Kernel Name")]
        kernels[v] = row
    return kernels


def workload() -> None:
    """The profiled calls (run by ncu): warm-ups outside the range, then one call of each version."""
    import importlib

    import torch

    sys.path[:0] = [str(ROOT), str(ROOT / "kernels" / "flashattn")]
    import assignment as fa

    mods = [importlib.import_module(v) for v in _versions()]
    data = fa.generate_input(**fa.CASES[_arg("--case", "benchmark")])
    for _ in range(3):
        for m in mods:
            m.custom_kernel(data)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for m in mods:
        m.custom_kernel(data)
        torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def main() -> None:
    sys.path.insert(0, str(ROOT))
    import importlib

    from reporter.harness.probe import ProbeSession

    sys.path.insert(0, str(ROOT / "kernels" / "flashattn"))
    versions = _versions()
    case = _arg("--case", "benchmark")
    for v in versions:  # imported here too, so that the record's code closure names what the workload ran
        importlib.import_module(v)
    session = ProbeSession(_arg("--name", "flashattn_stalls"), __file__)
    cmd = ["ncu", "--clock-control", "none", "--profile-from-start", "off", "--metrics", ",".join(METRICS), "--csv",
           "--page", "raw", sys.executable, __file__, "--workload", "--versions", ",".join(versions), "--case", case]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    text = out.stdout[out.stdout.index('"ID"'):]
    kernels = rows_by_version(text, versions)
    path = session.write({"case": case, "kernels": kernels}, description=(
        f"Nsight Compute (--clock-control none) on one call each of flashattn {', '.join(versions)} on {case}: issued "
        "instructions, active cycles, SM clock, issue rate and the warps stalled per issued instruction by reason."),
        attachments={"ncu_raw.csv": text.encode()})
    for v, m in kernels.items():
        top = sorted(((m.get(METRICS[i], 0.0), s) for i, s in enumerate(STALLS) if s not in ("selected",)), reverse=True)[:5]
        print(f"{v[:24]:24} inst {m['smsp__inst_executed.sum']:.4g} cycles {m['sm__cycles_active.avg']:.4g} "
              f"clock {m['gpc__cycles_elapsed.avg.per_second'] / 1e6:.0f} MHz issue% "
              f"{m['smsp__issue_active.avg.pct_of_peak_sustained_active']:.1f} "
              + " ".join(f"{s} {x:.2f}" for x, s in top))
    print(f"probe record: {path}")


if __name__ == "__main__":
    workload() if "--workload" in sys.argv else main()
