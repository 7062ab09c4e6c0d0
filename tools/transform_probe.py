"""A look at transform's per-call times outside the harness: does a version slow down at the start
of a run, and does triton.testing.do_bench agree with our figures?

    python tools/transform_probe.py        # a probe record under logs/devices/<gpu>/probes/

On the benchmark case (128M fp32): for the memcpy peer and the versions named in VERSIONS, after
a 3 s rest, 200 calls back to back timed one by one by the harness's timing loop with no L2 flush
(``reporter.harness.timing.benchmark``; the 03:53 run in logs/devices/h100/probes/ timed them with
plain CUDA events, the same measurement), then
``do_bench`` (its own L2 flush, 25 ms warm-up, 200 ms of calls). Writes the per-call times and
the summaries into a probe record (``transform_probe``, :mod:`reporter.harness.probe`) and prints a
table. Run on the GPU node from the repo root.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kernels" / "transform"))
VERSIONS = ("v02_vectorized", "v03_fast_math", "v04_unrolled")


def main() -> int:
    import importlib

    import torch
    from triton.testing import do_bench

    import assignment as A

    from reporter.harness.probe import ProbeSession
    from reporter.harness.timing import CudaEventTimer, StoppingRule, benchmark

    session = ProbeSession("transform_probe", __file__)
    x = A.generate_input(**A.CASES["benchmark"])
    fns = {"memcpy": lambda: A._copy(x)}
    for name in VERSIONS:
        mod = importlib.import_module(name)
        fns[name] = (lambda m: (lambda: m.custom_kernel(x)))(mod)
    out: dict[str, dict] = {"gpu": torch.cuda.get_device_name(), "case": A.CASES["benchmark"], "runs": {}}
    for name, fn in fns.items():
        fn()
        torch.cuda.synchronize()
        # the harness's timing loop (reporter.harness.timing): 3 s of rest, then 200 calls back to
        # back with no flush and no warm-up, every sample kept
        rule = StoppingRule(min_reps=200, max_reps=200, target_rel_stderr=0.0, budget_s=1e9, warmup_reps=0,
                            rest_s=3.0)
        times = list(benchmark(lambda rep, f=fn: f(), timer=CudaEventTimer(), rule=rule, flush=None).samples_ms)
        out["runs"][name] = {"per_call_ms": times, "first10_mean_ms": statistics.mean(times[:10]),
                             "last100_mean_ms": statistics.mean(times[100:]), "median_ms": statistics.median(times),
                             "do_bench_ms": do_bench(fn, warmup=25, rep=200)}
    path = session.write(out, description=(
        "transform's benchmark case (128M fp32): the memcpy peer and " + ", ".join(VERSIONS) + ", each after a 3 s "
        "rest, 200 calls back to back through the harness's timing loop with no L2 flush and no warm-up "
        "(per_call_ms), then triton.testing.do_bench (do_bench_ms)."))
    print(f"wrote {path}")
    print(f"{'':16s} {'first 10':>9s} {'last 100':>9s} {'median':>9s} {'do_bench':>9s}  (ms)")
    for name, r in out["runs"].items():
        print(f"{name:16s} {r['first10_mean_ms']:9.4f} {r['last100_mean_ms']:9.4f} {r['median_ms']:9.4f} "
              f"{r['do_bench_ms']:9.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
