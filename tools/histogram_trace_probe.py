"""Where v07's time goes after its reading: every block's counting end, flush and drain, launch by launch.

    python tools/histogram_trace_probe.py --case benchmark --reps 20

Builds ``probe_v07_traced`` (kernels/histogram/probes_flush.cu: v07's kernel with four stamps a block, the
global timer and the SM clock at entry, when its counting is done, when its warps have issued the flush,
and when a fence says the flush's atomics are performed), checks its output exactly against the reference,
then launches it ``--reps`` times, each queued right behind a 256 MiB write that evicts L2, between two CUDA
events, as the course harness times a call. Per launch it reduces the stamps to: the span from the first
entry to the last performed flush (global timer), the spread of the blocks' counting ends, each block's
flush issue and drain (SM clock intervals over that block's clock rate), and the time from the last block's
counting end to the launch's end. A probe record (``histogram_trace_<case>``, :mod:`reporter.harness.probe`)
keeps every launch's summary and every block's stamps of the first ``--raw-launches`` launches; the table
printed last gives the medians over launches.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "kernels" / "histogram"))

from reporter.assignments import get_assignment  # noqa: E402

SOURCE = ROOT / "kernels" / "histogram" / "probes_flush.cu"
WORDS = 8  # probes_flush.cu's TRACE_WORDS: (timer, clock) at entry, counted, flush issued, flush performed
THREADS, GROUP, NUM_BINS = 1024, 128, 256  # v07's block, and probes_flush.cu's defaults
SMEM = GROUP * NUM_BINS * 4 + (THREADS // 32) * 32 * 9 * 4


def reduce_launch(raw: np.ndarray) -> dict[str, float]:
    """Summaries of one launch's stamps (blocks x WORDS, uint64), in µs."""
    t = raw.astype(np.int64)
    ns, clk = t[:, 0::2], t[:, 1::2]  # blocks x 4 each: entry, counted, issued, performed
    ghz = (clk[:, 3] - clk[:, 0]) / np.maximum(ns[:, 3] - ns[:, 0], 1)
    start = ns[:, 0].min()
    counted = (ns[:, 1] - start) / 1e3
    issue = (clk[:, 2] - clk[:, 1]) / ghz / 1e3
    drain = (clk[:, 3] - clk[:, 1]) / ghz / 1e3
    return {"span_us": float((ns[:, 3].max() - start) / 1e3),
            "entry_spread_us": float((ns[:, 0].max() - start) / 1e3),
            "counted_first_us": float(counted.min()), "counted_median_us": float(np.median(counted)),
            "counted_last_us": float(counted.max()),
            "flush_issue_median_us": float(np.median(issue)), "flush_issue_max_us": float(issue.max()),
            "flush_median_us": float(np.median(drain)), "flush_max_us": float(drain.max()),
            "after_last_counted_us": float((ns[:, 3].max() - ns[:, 1].max()) / 1e3),
            "clock_ghz": float(np.median(ghz))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", default="benchmark")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--raw-launches", type=int, default=3, help="launches whose every block's stamps are kept")
    args = ap.parse_args(argv)
    from reporter.cuda import load_module
    from reporter.harness.probe import ProbeSession
    from reporter.harness.timing import CudaEventTimer

    session = ProbeSession(f"histogram_trace_{args.case}", __file__, cuda_sources=[SOURCE])
    a = get_assignment(ROOT / "kernels", "histogram")
    case = a.case(args.case)
    array, num_bins = data = a.spec.generate_input(**case)
    ref = a.spec.ref_kernel(data)
    length, channels = array.shape
    if num_bins != NUM_BINS or channels % GROUP:
        raise SystemExit(f"the traced v07 counts {NUM_BINS} bins of 128-channel groups; {args.case} is {channels} "
                         f"channels, {num_bins} bins")
    sms = torch.cuda.get_device_properties(array.device).multi_processor_count
    groups = channels // GROUP
    chunks = max(1, sms // groups)
    blocks = groups * chunks
    kernel = load_module(SOURCE).kernel("probe_v07_traced", max_dynamic_shared_memory=SMEM)
    stamps = torch.zeros(blocks * WORDS, dtype=torch.int64, device=array.device)
    scalars = (np.uint32(length), np.uint32(channels), np.uint32(groups), np.uint32(chunks))
    out = torch.empty((channels, NUM_BINS), dtype=torch.int32, device=array.device)

    def call() -> None:
        out.zero_()
        kernel((blocks,), (THREADS,), array, out, stamps, *scalars, shared_mem=SMEM)

    call()
    torch.cuda.synchronize()
    if not torch.equal(out, ref):
        raise SystemExit("probe_v07_traced's histogram differs from the reference")
    flush = torch.empty(256 * 1024 * 1024 // 8, dtype=torch.int64, device=array.device)
    timer = CudaEventTimer()  # the harness's one timing loop: the L2 write, start event, call, end event
    launches, raw = [], []
    for i in range(args.reps):
        stamps.zero_()
        torch.cuda.synchronize()
        event_us = timer.time_call(call, lambda: flush.fill_(42)) * 1e3
        s = stamps.view(blocks, WORDS).cpu().numpy().astype(np.uint64)
        launches.append({**reduce_launch(s), "event_us": event_us})
        if i < args.raw_launches:
            raw.append(s.tolist())
    keys = list(launches[0])
    med = {k: statistics.median(x[k] for x in launches) for k in keys}
    path = session.write(
        {"case": args.case, "case_args": case, "blocks": blocks, "groups": groups, "chunks": chunks,
         "launches": launches, "median": med, "raw": raw},
        description=(f"v07's kernel with four stamps a block (probe_v07_traced), {args.reps} launches on {args.case}, "
                     "each queued right behind a 256 MiB L2-evicting write between two CUDA events (event_us): per "
                     "launch, the span, the spread of the blocks' counting ends, each block's flush issue and drain, and "
                     f"the time after the last counting end; raw: every block's stamps of the first {args.raw_launches} "
                     "launches (blocks x [timer, clock] at entry, counted, flush issued, flush performed)."))
    print(f"wrote {path}")
    for k in keys:
        print(f"{k:24s} median {med[k]:9.2f}   min {min(x[k] for x in launches):9.2f}   max {max(x[k] for x in launches):9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
