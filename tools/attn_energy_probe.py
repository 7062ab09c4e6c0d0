"""Probe: the energy a flashattn call spends at the card's power cap, version against version (issue 35).

Under sustained load the card runs at its power cap, and its clock settles where the power drawn
meets the cap: there a call's time is its energy divided by the cap. This probe measures that
energy. For each case, and each contender (a version module or a peer of the assignment), in ABBA
order over ``--rounds`` rounds: ``--warm-s`` seconds of back-to-back calls to bring the card to
the cap, a synchronise, then ``--measure-s`` seconds of back-to-back calls between two readings of
NVML's total energy counter (``nvmlDeviceGetTotalEnergyConsumption``, millijoules). It records per
window the calls, the wall time per call, the joules per call, the mean power and the SM clocks
NVML reported while the window ran (sampled between launches). At most two calls are in flight (the
host waits for call i - 2 before it queues call i), so a window's calls are the calls its time
covers, and no deep queue keeps the card loaded past it. No L2 flush
between calls: the cases' calls take a millisecond or more, and the probe asks what the card
spends on the work, not how long one cold call takes. On the GPU node, from the repository root::

    python3 tools/attn_energy_probe.py --cases benchmark,test_medium \\
        --contenders v16_launch_plan,v26_split_q,sdpa_cudnn,gemm_same_flops --name flashattn_energy

The contender ``gemm_same_flops`` is a reference, not attention: cuBLAS's fp16 product of two square
N x N matrices (fp32 accumulation, torch.matmul), N the cube root of half the case's flops, so that
its tensor-core work is the case's (N = 16384 for the benchmark, 8192 for test_medium): what a call of
that much tensor work alone spends at the cap.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _arg(flag: str, default: str) -> str:
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else default


def abba(names: list[str], rounds: int) -> list[str]:
    """The order the windows run in: the contenders forwards, then backwards, and so on."""
    out: list[str] = []
    for r in range(rounds):
        out.extend(names if r % 2 == 0 else list(reversed(names)))
    return out


_in_flight: list = []


def run_bounded(fn, data) -> None:
    """One call of ``fn``, queued once at most one earlier call is still running."""
    import torch

    if len(_in_flight) >= 2:
        _in_flight.pop(0).synchronize()
    fn(data)
    e = torch.cuda.Event()
    e.record()
    _in_flight.append(e)


def window(fn, data, seconds: float, nvml, handle) -> dict[str, float]:
    """Back-to-back calls of ``fn`` for about ``seconds`` (the card already at its cap): calls, ms a
    call, joules a call, mean watts, the SM clocks seen."""
    import torch

    torch.cuda.synchronize()
    e0 = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    t0 = time.perf_counter()
    calls, clocks = 0, []
    while time.perf_counter() - t0 < seconds:
        run_bounded(fn, data)
        calls += 1
        if calls % 4 == 0:
            clocks.append(float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)))
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    e1 = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    joules = (e1 - e0) / 1000.0
    _in_flight.clear()
    return {"calls": calls, "ms_per_call": 1000.0 * (t1 - t0) / calls, "joules_per_call": joules / calls,
            "watts": joules / (t1 - t0), "sm_clock_median_mhz": statistics.median(clocks) if clocks else float("nan"),
            "sm_clock_min_mhz": min(clocks) if clocks else float("nan")}


_gemm: dict[int, tuple] = {}


def gemm_n(case: dict) -> int:
    """The side of the square product whose 2 N^3 flops are the case's 4 B H S^2 D (rounded to 128)."""
    flops = 4.0 * case["batch_size"] * case["num_heads"] * case["seq_len"] ** 2 * case["head_dim"]
    return int(round((flops / 2) ** (1 / 3) / 128)) * 128


def gemm_same_flops(data) -> object:
    """cuBLAS fp16 A @ B (N x N, fp32 accumulation) with the tensor-core work of the case of ``data``."""
    import torch

    b, h, s, d = data[0].shape
    n = gemm_n({"batch_size": b, "num_heads": h, "seq_len": s, "head_dim": d})
    if n not in _gemm:
        _gemm.clear()
        g = torch.Generator(device="cuda").manual_seed(5)
        _gemm[n] = tuple(torch.randn(n, n, device="cuda", dtype=torch.float16, generator=g) for _ in range(2))
    a, bm = _gemm[n]
    return a @ bm


def main() -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "kernels" / "flashattn")]
    import importlib

    import pynvml
    import torch

    import assignment as fa
    from reporter.harness.gpu_state import _nvml_index_of_current_device
    from reporter.harness.probe import ProbeSession

    cases = _arg("--cases", "benchmark").split(",")
    names = _arg("--contenders", "v16_launch_plan,sdpa_cudnn").split(",")
    rounds = int(_arg("--rounds", "2"))
    warm_s, measure_s = float(_arg("--warm-s", "2")), float(_arg("--measure-s", "3"))
    fns = {n: fa.PEERS[n].fn if n in fa.PEERS else gemm_same_flops if n == "gemm_same_flops"
           else importlib.import_module(n).custom_kernel for n in names}
    session = ProbeSession(_arg("--name", "flashattn_energy"), __file__)
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(_nvml_index_of_current_device(pynvml))

    results: dict[str, list[dict[str, float | str]]] = {}
    for case in cases:
        data = fa.generate_input(**fa.CASES[case])
        for n in names:  # compile and plan outside the windows
            fns[n](data)
        torch.cuda.synchronize()
        rows: list[dict[str, float | str]] = []
        for i, n in enumerate(abba(names, rounds)):
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < warm_s:
                run_bounded(fns[n], data)
            w = window(fns[n], data, measure_s, pynvml, handle)
            rows.append({"contender": n, "window": i, **w})
            print(f"{case:12} {n[:22]:22} {w['ms_per_call']:8.4f} ms {w['joules_per_call']:8.4f} J "
                  f"{w['watts']:6.1f} W clock {w['sm_clock_median_mhz']:.0f} MHz (min {w['sm_clock_min_mhz']:.0f})",
                  flush=True)
        results[case] = rows
        del data
        torch.cuda.empty_cache()
    path = session.write(
        {"cases": results, "warm_s": warm_s, "measure_s": measure_s, "rounds": rounds,
         "gemm_n": {c: gemm_n(fa.CASES[c]) for c in cases} if "gemm_same_flops" in names else {}},
        description=(f"Energy per call at the power cap (NVML's total energy counter over {measure_s} s of "
                     f"back-to-back calls after {warm_s} s of warm-up, ABBA order, {rounds} rounds) of flashattn "
                     f"{', '.join(names)} on {', '.join(cases)}: calls, ms and joules per call, mean power, SM clock."))
    print(f"probe record: {path}")


if __name__ == "__main__":
    main()
