"""Where a histogram version's time goes after its reading: every block's counting end, flush and drain.

    python tools/histogram_trace_probe.py --case benchmark --reps 20 --version v07 --version v15

Builds each version's kernel (one of :data:`KERNELS`; ``v07_clustered`` is v07's kernel launched in clusters
of two, a probe of probes_flush.cu) with TRACE defined
(kernels/histogram/histogram_trace.cuh: four stamps a block, the global timer and the SM clock at entry,
when its counting is done, when its warps have issued the flush, and when a fence says the flush's
atomics are performed), checks its output exactly against the reference, then launches it ``--reps``
times, the versions in turn, each launch queued right behind a 256 MiB write that evicts L2, between two
CUDA events, as the course harness times a call. Per launch it reduces the stamps to: the span from the
first entry to the last performed flush (global timer), the spread of the blocks' counting ends, each
block's flush issue and drain (SM clock intervals over that block's clock rate), and the time from the
last block's counting end to the launch's end. v15's "flush" runs from its counting end, so it holds the
cluster's synchronisation and the pair's sum in distributed shared memory too. Its unpaired blocks (4 on
512 channels and 132 SMs) flush a whole histogram, and an idle block (none there) would stamp its counting
end at its entry; both count in the statistics as the other blocks do. A probe record
(``histogram_trace_<case>``,
:mod:`reporter.harness.probe`) keeps every launch's summary and every block's stamps of each version's
first ``--raw-launches`` launches; the table printed last gives the medians over launches.
"""

from __future__ import annotations

import argparse
import importlib
import re
import statistics
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "kernels" / "histogram"))

from reporter.assignments import get_assignment  # noqa: E402

import v05_persistent as v05  # noqa: E402

HEADER = ROOT / "kernels" / "histogram" / "histogram_trace.cuh"
_DEFINES = {m.group(1): int(m.group(2)) for m in re.finditer(r"^#define (TRACE_\w+) (\d+)", HEADER.read_text(), re.M)}
WORDS, MAX_BLOCKS = _DEFINES["TRACE_WORDS"], _DEFINES["TRACE_MAX_BLOCKS"]
THREADS, UNROLL = int(v05.CONFIG["threads"]), int(v05.CONFIG["unroll"])  # every traced version's CONFIG is v05's
GROUP, NUM_BINS = v05.GROUP, v05.NUM_BINS
SMEM = GROUP * NUM_BINS * 4 + (THREADS // 32) * 32 * 9 * 4  # v05's: the histogram and a flush tile per warp
# name -> (a module, its attribute that names the CUDA source, the kernel, the module's grid function or None
# for v05's groups x chunks): versions, and probes of probes_flush.cu, whose kernel takes v05's arguments and
# adds into a zeroed output
KERNELS = {"v07_lean_launch": ("v05_persistent", "SOURCE", "histogram_persistent", None),
           "v07_clustered": ("histogram_probes", "FLUSH_SOURCE", "probe_v07_clustered", None),
           "v13_pair_atomics": ("v13_pair_atomics", "SOURCE", "histogram_pair_atomics", None),
           "v14_shifted_flush": ("v14_shifted_flush", "SOURCE", "histogram_shifted_flush", None),
           "v15_cluster_pairs": ("v15_cluster_pairs", "SOURCE", "histogram_cluster_pairs", "blocks")}


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
    ap.add_argument("--version", action="append", required=True,
                    help="a version of KERNELS (name or vNN), or v07_clustered (v07's kernel in clusters of two)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--raw-launches", type=int, default=3, help="launches per version whose every block's stamps are kept")
    args = ap.parse_args(argv)
    from reporter.cuda import load_module
    from reporter.harness.probe import ProbeSession
    from reporter.harness.timing import CudaEventTimer

    a = get_assignment(ROOT / "kernels", "histogram")
    names = [v if v in KERNELS else a.version(v).name for v in args.version]
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        raise SystemExit(f"--version {', '.join(unknown)}: not traceable here; one of {', '.join(KERNELS)}")
    sources = [getattr(importlib.import_module(KERNELS[n][0]), KERNELS[n][1]) for n in names]
    session = ProbeSession(f"histogram_trace_{args.case}", __file__, cuda_sources=[HEADER, *sources])
    case = a.case(args.case)
    array, num_bins = data = a.spec.generate_input(**case)
    ref = a.spec.ref_kernel(data)
    length, channels = array.shape
    if num_bins != NUM_BINS or channels % 4:
        raise SystemExit(f"the versions count {NUM_BINS} bins of 4-channel words; {args.case} is {channels} "
                         f"channels, {num_bins} bins")
    sms = torch.cuda.get_device_properties(array.device).multi_processor_count
    groups = -(-channels // GROUP)
    chunks = max(1, sms // groups)
    scalars = (np.uint32(length), np.uint32(channels), np.uint32(groups), np.uint32(chunks))
    out = torch.empty((channels, NUM_BINS), dtype=torch.int32, device=array.device)
    calls, traces = [], []
    for name, source in zip(names, sources, strict=True):
        mod_name, _, kernel_name, grid_fn = KERNELS[name]
        blocks = getattr(importlib.import_module(mod_name), grid_fn)(groups, chunks) if grid_fn else groups * chunks
        if blocks > MAX_BLOCKS:
            raise SystemExit(f"{name} launches {blocks} blocks on {args.case}; histogram_trace.cuh stamps {MAX_BLOCKS}")
        module = load_module(source, defines={"THREADS": THREADS, "UNROLL": UNROLL, "TRACE": 1})
        kernel = module.kernel(kernel_name, max_dynamic_shared_memory=SMEM)
        g = module.global_array("g_trace", "uint64", blocks * WORDS)

        def call(kernel=kernel, blocks=blocks) -> None:
            out.zero_()
            kernel((blocks,), (THREADS,), array, out, *scalars, shared_mem=SMEM)

        call()
        torch.cuda.synchronize()
        if not torch.equal(out, ref):
            raise SystemExit(f"{name}'s traced build gives a histogram other than the reference")
        calls.append(call)
        traces.append((g, blocks))
    flush = torch.empty(256 * 1024 * 1024 // 8, dtype=torch.int64, device=array.device)
    timer = CudaEventTimer()  # the harness's one timing loop: the L2 write, start event, call, end event
    launches: list[list[dict]] = [[] for _ in names]
    raw: list[list] = [[] for _ in names]
    for i in range(args.reps):
        for j, (call, (g, blocks)) in enumerate(zip(calls, traces, strict=True)):
            g.fill(0)
            torch.cuda.synchronize()
            event_us = timer.time_call(call, lambda: flush.fill_(42)) * 1e3
            s = g.get().reshape(blocks, WORDS)
            launches[j].append({**reduce_launch(s), "event_us": event_us})
            if i < args.raw_launches:
                raw[j].append(s.tolist())
    results = [{"version": n, "blocks": b, "launches": ls, "median": {k: statistics.median(x[k] for x in ls) for k in ls[0]}}
               for n, (_, b), ls in zip(names, traces, launches, strict=True)]
    path = session.write(
        {"case": args.case, "case_args": case, "groups": groups, "chunks": chunks, "results": results,
         "raw": dict(zip(names, raw, strict=True))},
        description=(f"{', '.join(names)} built with TRACE (histogram_trace.cuh: four stamps a block), {args.reps} "
                     f"launches each on {args.case}, the versions in turn, each queued right behind a 256 MiB "
                     "L2-evicting write between two CUDA events (event_us): per launch, the span, the spread of the "
                     "blocks' counting ends, each block's flush issue and drain, and the time after the last counting "
                     f"end; raw: every block's stamps of each version's first {args.raw_launches} launches (blocks x "
                     "[timer, clock] at entry, counted, flush issued, flush performed)."))
    print(f"wrote {path}")
    keys = list(results[0]["median"])
    print(f"{'median over launches':24s} " + " ".join(f"{n[:17]:>17s}" for n in names))
    for k in keys:
        print(f"{k:24s} " + " ".join(f"{r['median'][k]:17.2f}" for r in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
