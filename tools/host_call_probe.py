"""How long does the host take to queue one call of transform's versions, and what in it takes the time?

    python tools/host_call_probe.py          # a probe record under logs/devices/<gpu>/probes/

A course harness queues its L2 clear, records the start event, calls ``custom_kernel`` and records
the end event; when queuing the call takes the host longer than the clear takes the GPU, the GPU
waits for the host inside the sample. This probe times, on the benchmark arrays (128M fp32 and
128M bf16), the memcpy peer, v15 and v16 (``v16_lean_call``: v15's kernel with the host path cut)
and the pieces a call is made of, all through the harness's own timing loop
(``reporter.harness.timing.benchmark_interleaved`` with the harness's L2 flush and plain CUDA
events): 400 rounds, one call of each per round in a rotating order, so every callable sees the
same host. Per callable it keeps each sample's queuing time (from the start event's record to
the end event's, ``enqueue_ms``) and its event time. The pieces: nothing between the two events;
``torch.empty_like(x)``; a 0-d float64 ``torch.empty``; the current stream's handle through
``torch.cuda.current_stream()`` and through the raw accessor v16 uses. Writes every sample into a
probe record (``host_call``, :mod:`reporter.harness.probe`) and prints a table. Run on the GPU node
from the repo root.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kernels" / "transform"))
sys.path.insert(0, str(ROOT))
ROUNDS = 400


def _q(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def _callables(x: Any, copy: Callable[[Any], Any], v15: Callable[[Any], Any],
               v16: Callable[[Any], Any]) -> dict[str, Callable[[int], Any]]:
    """What the probe times on the array x, by name: the pieces of a call, then whole calls."""
    import torch

    dev, index = x.device, x.device.index or 0
    return {
        "events only": lambda rep: None,
        "torch.empty_like(x)": lambda rep: torch.empty_like(x),
        "0-d float64 torch.empty": lambda rep: torch.empty((), dtype=torch.float64, device=dev),
        "current_stream().cuda_stream": lambda rep: torch.cuda.current_stream(dev).cuda_stream,
        "raw stream handle": lambda rep: torch._C._cuda_getCurrentRawStream(index),
        "memcpy peer": lambda rep: copy(x),
        "v15 call": lambda rep: v15(x),
        "v16 call": lambda rep: v16(x),
    }


def main() -> int:
    import assignment as A
    import torch
    import v15_in_order as v15
    import v16_lean_call as v16

    from reporter.harness.probe import ProbeSession
    from reporter.harness.timing import CudaEventTimer, L2Flusher, StoppingRule, benchmark_interleaved

    session = ProbeSession("host_call", __file__)
    props = torch.cuda.get_device_properties(0)
    flush = L2Flusher(int(getattr(props, "L2_cache_size", 50 << 20)))
    out: dict[str, object] = {"gpu": torch.cuda.get_device_name(), "rounds": ROUNDS, "cases": {}}
    rows: list[tuple[str, str, float, float, float, float, float]] = []
    for case_name in ("benchmark", "benchmark_bf16"):
        x = A.generate_input(**A.CASES[case_name])
        if not torch.equal(A._copy(x), x):  # every call that moves data is right before it is timed
            raise SystemExit(f"the memcpy peer on {case_name} is not a copy")
        for name, fn in (("v15", v15.custom_kernel), ("v16", v16.custom_kernel)):
            ok, why = A.check_implementation(x, fn(x))
            if not ok:
                raise SystemExit(f"{name} on {case_name}: {why}")
        calls = _callables(x, A._copy, v15.custom_kernel, v16.custom_kernel)
        rule = StoppingRule(min_reps=ROUNDS, max_reps=ROUNDS, target_rel_stderr=0.0, budget_s=1e9, warmup_reps=3,
                            rest_s=0.0)
        res = benchmark_interleaved(list(calls.values()), timer=CudaEventTimer(), rule=rule, flush=flush)
        case_out: dict[str, object] = {}
        for (name, _), st, err in zip(calls.items(), res.stats, res.errors):
            if err is not None or st is None or not st.enqueue_ms:
                raise SystemExit(f"{name} on {case_name}: {err}")
            enq = [e * 1e3 for e in st.enqueue_ms]
            case_out[name] = {"enqueue_us": enq, "event_ms": list(st.samples_ms), "mean_ms": st.mean_ms,
                              "median_ms": st.median_ms}
            rows.append((case_name, name, statistics.median(enq), _q(enq, 0.9), _q(enq, 0.99),
                         st.mean_ms * 1e3, st.median_ms * 1e3))
        out["cases"][case_name] = case_out  # type: ignore[index]
    path = session.write(out, description=(
        f"The host's time to queue one call (from the start event's record to the end event's) of the memcpy peer, "
        f"transform v15, v16 and the pieces of a call, {ROUNDS} interleaved rounds in the harness's loop with its "
        f"flush, both benchmark arrays: per callable, enqueue_us (host µs per sample) and event_ms (event time)."))
    print(f"wrote {path}")
    print(f"{'case':15s} {'callable':30s} {'queue p50':>9s} {'p90':>7s} {'p99':>7s} {'mean':>8s} {'median':>8s}"
          "  (queue: host µs; mean, median: event µs)")
    for c, n, p50, p90, p99, mean, med in rows:
        print(f"{c:15s} {n:30s} {p50:9.1f} {p90:7.1f} {p99:7.1f} {mean:8.1f} {med:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
