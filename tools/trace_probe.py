"""Timeline of a traced persistent flashattn kernel: where a launch's time goes, unit by unit.

    python tools/trace_probe.py --case test_small --config 'v18:{"PREFETCH": 0}' --config v19 --reps 5

Each version and configuration (defines merged over the version's CONFIG; the version's module
gives ``make_kernel`` and ``CONFIG``, and ``module(config, device_index, cluster)`` and ``v15`` or
else a ``SOURCE`` that v19's builder compiles) is built with TRACE=1 (kernels/flashattn/trace.cuh, whose layout this reads), checked once against
the reference on fresh inputs, then launched ``--reps`` times,
each after a 256 MiB write that evicts L2 (as the course harness does before a timed call) with
g_trace cleared first. Per launch it reads every CTA's stamps and reduces them to: the span from
the first CTA's entry to the last one's exit (globaltimer), each CTA's clock rate, the time from
entry to its first Q, each unit's wait for Q after the previous unit's epilogue, the unit's first
S, its kv steps, its last P.V and epilogue, and the tail from the last epilogue to exit (clock64
intervals within a CTA, converted with that CTA's rate), and the boundary between two units, from the
last step's start of one to the first step's start of the next (consumer 0's stamps, whichever
schedule a kernel runs between them; units of at most 8 tiles, whose every step is stamped); where a kernel's store warps stamp their
last stores (slots 5 and 6), the span to the latest of those too. With ``--queued`` each launch is
queued right behind the write between two CUDA events, as the course harness times a call, and its
event time is kept; ``--untraced N`` then times N such calls of each version's own (untraced) build,
the versions in turn. A probe record (``trace_<case>``,
:mod:`reporter.harness.probe`) keeps every launch's summary, with the raw stamps of each version's first
``--raw-launches`` launches (3 unless told) beside it as an xz-compressed JSON attachment (about half gzip's
size for these stamps, which are most of a probe's); the table printed last gives medians over CTAs and
launches.
"""

from __future__ import annotations

import argparse
import itertools
import json
import lzma
import re
import statistics
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "kernels" / "flashattn"))

from reporter.assignments import get_assignment  # noqa: E402

HEADER = ROOT / "kernels" / "flashattn" / "trace.cuh"


def layout(header: Path = HEADER) -> dict[str, int]:
    """Every ``#define NAME <integer>`` of trace.cuh: the sizes (TRACE_SLOTS is computed) and the
    unit slots (TR_*), so this file never restates the layout."""
    found = {m.group(1): int(m.group(2)) for m in re.finditer(r"^#define (\w+) (\d+)\b", header.read_text(), re.M)}
    found["TRACE_SLOTS"] = found["TRACE_UNIT0"] + found["TRACE_UNITS"] * found["TRACE_PER_UNIT"]
    return found


L = layout()
SLOT = {name[3:].lower(): v for name, v in L.items() if name.startswith("TR_")}


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def reduce_launch(raw: np.ndarray, ctas: int, units: int = L["TRACE_UNITS"], per_unit: int = L["TRACE_PER_UNIT"],
                  unit0: int = L["TRACE_UNIT0"]) -> dict:
    """Summaries of one launch's stamps (``raw``: ctas x slots, uint64)."""
    t = raw[:ctas].astype(np.int64)
    entry_ns, entry_clk, exit_ns, exit_clk = t[:, 0], t[:, 1], t[:, 2], t[:, 3]
    ghz = (exit_clk - entry_clk) / np.maximum(exit_ns - entry_ns, 1)
    # slots 5 and 6: a CTA's store warps' last stores (v35 on; 0 where a kernel has none): the CTA's end is the
    # latest of those and consumer 0's exit
    end_ns = np.maximum(exit_ns, np.maximum(t[:, 5], t[:, 6]))
    store_tail = [(end_ns[c] - exit_ns[c]) / 1e3 for c in range(ctas) if max(t[c, 5], t[c, 6]) > 0]
    out: dict = {"span_us": float((exit_ns.max() - entry_ns.min()) / 1e3),
                 "span_all_us": float((end_ns.max() - entry_ns.min()) / 1e3),
                 "store_tail_us": _median(store_tail),
                 "entry_spread_us": float((entry_ns.max() - entry_ns.min()) / 1e3),
                 "clock_ghz": float(np.median(ghz))}
    first_q, q_wait, s0, step, last, epi, tail, unit_time, n_units = [], [], [], [], [], [], [], [], []
    k0_wait, turn_wait, lag1, boundary = [], [], [], []
    for c in range(ctas):
        rate = ghz[c] * 1e3  # cycles per µs
        if rate <= 0:
            continue
        u_slots = t[c, unit0:unit0 + units * per_unit].reshape(units, per_unit)
        done = [u for u in range(units) if u_slots[u, SLOT["epi_done"]] > 0]
        n_units.append(len(done))
        prev_end = entry_clk[c]
        prev_last_step = None  # the previous unit's last step stamp: a boundary ends at this unit's first
        for u in done:
            row = u_slots[u]
            (first_q if u == 0 else q_wait).append((row[SLOT["q_ready"]] - prev_end) / rate)
            s0.append((row[SLOT["s0_done"]] - row[SLOT["q_ready"]]) / rate)
            if row[SLOT["k0_ready"]] > 0 and row[SLOT["turn0"]] > 0:
                k0_wait.append((row[SLOT["k0_ready"]] - row[SLOT["q_ready"]]) / rate)
                turn_wait.append((row[SLOT["turn0"]] - row[SLOT["k0_ready"]]) / rate)
            if row[SLOT["epi_done_1"]] > 0:
                lag1.append((row[SLOT["epi_done_1"]] - row[SLOT["epi_done"]]) / rate)
            steps = [x for x in row[SLOT["step1"]:SLOT["step1"] + 8] if x > 0]
            step += [(b - a) / rate for a, b in itertools.pairwise(steps)]  # full steps, start to start
            if steps:  # the last step's start to its P.V (and the P.V-only step after it)
                last.append((row[SLOT["last_pv"]] - steps[-1]) / rate)
                if prev_last_step is not None:
                    boundary.append((steps[0] - prev_last_step) / rate)
            # the kernels stamp steps 1 .. 8 and the last one while a unit has at most 9 tiles: with 8 stamps
            # the last one may be step 8 of a longer unit, so no boundary is taken from it
            prev_last_step = steps[-1] if 0 < len(steps) < 8 else None
            epi.append((row[SLOT["epi_done"]] - row[SLOT["last_pv"]]) / rate)
            unit_time.append((row[SLOT["epi_done"]] - row[SLOT["q_ready"]]) / rate)
            prev_end = row[SLOT["epi_done"]]
        if done:
            tail.append((exit_clk[c] - prev_end) / rate)
    out.update(k0_wait_us=_median(k0_wait), turn_wait_us=_median(turn_wait), wg1_lag_us=_median(lag1),
               boundary_us=_median(boundary))
    out.update(first_q_us=_median(first_q), q_wait_us=_median(q_wait), q_wait_max_us=max(q_wait, default=None),
               s0_us=_median(s0), step_us=_median(step), last_step_us=_median(last), epilogue_us=_median(epi),
               unit_us=_median(unit_time), tail_us=_median(tail), units_max=max(n_units, default=0),
               units_min=min(n_units, default=0))
    return out


def kept_raw(results: list[dict], n: int) -> list[list]:
    """Takes each launch's raw stamps out of ``results`` (whose summaries stay) and returns those of each
    version's first ``n`` launches, per version: the probe's attachment."""
    raw = [[x.pop("raw") for x in r["launches"]] for r in results]
    return [launches[:max(0, n)] for launches in raw]


def _module_of(mod):
    """The version's ``module(config, device_index, cluster)`` and v15's host module: its own where it names
    them, else v19's builder over its SOURCE (the versions that plan v21's launch through double_q_host)."""
    import v19_double_q as v19

    if hasattr(mod, "module"):
        return mod.module, mod.v15
    return (lambda cfg, device_index, cluster: v19.module_of(mod.SOURCE, cfg, device_index, cluster)), v19.v15


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", default="test_small")
    ap.add_argument("--config", action="append", default=[], metavar="VERSION[:JSON]",
                    help="a version and JSON defines over its CONFIG, e.g. 'v18:{\"PREFETCH\": 0}' (repeatable)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--raw-launches", type=int, default=3, metavar="N",
                    help="keep the raw stamps of each version's first N launches beside the record (every launch's "
                         "summary is kept; the raw stamps are most of a probe's size)")
    ap.add_argument("--untraced", type=int, default=0, metavar="N",
                    help="then N event-timed calls of each version's untraced build, queued behind the write, in turn")
    ap.add_argument("--queued", action="store_true",
                    help="queue each launch right behind the L2-evicting write, between two CUDA events, as the course "
                         "harness times a call (its event time is kept beside the stamps); by default the write is "
                         "waited for before the launch")
    args = ap.parse_args(argv)
    from reporter.harness.probe import ProbeSession
    from reporter.harness.timing import CudaEventTimer

    session = ProbeSession(f"trace_{args.case}", __file__, cuda_sources=[HEADER])

    a = get_assignment(ROOT / "kernels", "flashattn")
    case = a.case(args.case)
    flush = torch.empty(256 * 1024 * 1024 // 8, dtype=torch.int64, device="cuda")
    timer = CudaEventTimer()  # the harness's one timing loop: flush, start event, call, end event
    results = []
    for item in args.config:
        name, _, text = item.partition(":")
        v = a.version(name)
        mod = v.load()
        cfg = {**mod.CONFIG, **json.loads(text or "{}"), "TRACE": 1}
        kernel = mod.make_kernel(cfg)
        data = a.spec.generate_input(**case)
        ref = a.spec.ref_kernel(data)
        out = kernel(data)
        torch.cuda.synchronize()
        err = float((out.float() - ref.float()).abs().max())
        q = data[0]
        module, v15 = _module_of(mod)
        cluster = v15.cluster_for(q.shape[2], int(cfg.get("CLUSTER", 2)))
        n_slots = L["TRACE_MAX_CTAS"] * L["TRACE_SLOTS"]
        g = module(cfg, q.device.index, cluster).global_array("g_trace", "uint64", n_slots)
        launches = []
        for _ in range(args.reps):
            event_us = None
            if args.queued:
                g.fill(0)
                torch.cuda.synchronize()
                event_us = timer.time_call(lambda: kernel(data), lambda: flush.fill_(42)) * 1e3
            else:
                flush.fill_(42)
                g.fill(0)
                torch.cuda.synchronize()
                kernel(data)
                torch.cuda.synchronize()
            raw = g.get().reshape(L["TRACE_MAX_CTAS"], L["TRACE_SLOTS"])
            ctas = int(np.count_nonzero(raw[:, 0]))  # the CTAs that stamped their entry
            launches.append({"summary": {**reduce_launch(raw, ctas), "event_us": event_us}, "raw": raw[:ctas].tolist()})
        results.append({"version": v.name, "config": cfg, "ctas": ctas, "max_abs_err": err, "launches": launches})
    if args.untraced:
        data = a.spec.generate_input(**case)
        # one plain build per --config (two configurations of one version are two builds)
        plain = [a.version(r["version"]).load().make_kernel({k: v for k, v in r["config"].items() if k != "TRACE"})
                 for r in results]
        for f in plain:
            f(data)  # plans made, modules loaded
        times: list[list[float]] = [[] for _ in plain]
        for _ in range(args.untraced):
            for i, f in enumerate(plain):
                torch.cuda.synchronize()
                times[i].append(timer.time_call(lambda f=f: f(data), lambda: flush.fill_(42)) * 1e3)
        for r, xs in zip(results, times, strict=True):
            r["untraced_event_us"] = xs
    raw = kept_raw(results, args.raw_launches)
    path = session.write(
        {"case": args.case, "case_args": case, "layout": L, "results": results},
        description=(f"Traced (TRACE=1) launches of {', '.join(args.config)} on {args.case}, {args.reps} each after a "
                     "256 MiB L2-evicting write"
                     + (" queued right behind it between two CUDA events (event_us), as the course harness times a call"
                        if args.queued else "") + ": per launch the summary of every CTA's stamps (results[].launches[]"
                     ".summary); the raw stamps of each version's first " + str(args.raw_launches) + " launches, per version and "
                     "launch, CTAs x slots, are the xz-compressed attachment."),
        attachments={"raw.json.xz": lzma.compress(json.dumps(raw).encode(), preset=9)})
    print(f"wrote {path}")
    keys = ["event_us", "span_us", "span_all_us", "store_tail_us", "clock_ghz", "first_q_us", "q_wait_us", "k0_wait_us", "turn_wait_us", "s0_us", "step_us",
            "last_step_us", "epilogue_us", "wg1_lag_us", "unit_us", "boundary_us", "tail_us"]
    print(f"{'version config':44s} err    " + " ".join(f"{k.removesuffix('_us'):>9s}" for k in keys))
    for r in results:
        med = {k: _median([x["summary"][k] for x in r["launches"] if x["summary"][k] is not None]) for k in keys}
        name = r["version"] + " " + ",".join(f"{k}={v}" for k, v in r["config"].items() if k != "TRACE")
        print(f"{name[:44]:44s} {r['max_abs_err']:.0e} " + " ".join(
            f"{med[k]:9.2f}" if med[k] is not None else f"{'-':>9s}" for k in keys))
    for r in results:
        if r.get("untraced_event_us"):
            xs = r["untraced_event_us"]
            print(f"{r['version']:24s} untraced, queued: median {statistics.median(xs):.2f} µs, min {min(xs):.2f}, "
                  f"mean {statistics.fmean(xs):.2f} over {len(xs)} calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
