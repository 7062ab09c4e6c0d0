"""How close to the device-to-device memcpy does an SM kernel get when it only moves the bytes?

    python tools/copy_ceiling_probe.py            # copies against transform's versions
    python tools/copy_ceiling_probe.py variants   # more ways to copy, fp32 only
    python tools/copy_ceiling_probe.py hints      # load/store hints and L2 prefetch, fp32 only
    python tools/copy_ceiling_probe.py order      # tiles handed out in order by a counter, both dtypes

transform's goal is a version within 1.02x of the memcpy of the same array. This probe times,
on the benchmark arrays (128M fp32: 512 MiB; 128M bf16: 256 MiB), the memcpy peer against two
copies by SM kernels (``kernels/transform/probes.cu``, which was ``tools/copy_ceiling.cu`` until 05:10 UTC on 23 Nov: a 16-byte grid-stride copy, and the bulk-copy
ring of transform v07 without its arithmetic) and against transform's v03, v06, v07, v08 and v10, all
through the harness's timing loop as a version's figure is taken (``reporter.harness.timing``:
3 s of rest, 3 warm-up calls, 100 calls each after the harness's L2 flush), then with
``triton.testing.do_bench``. The memcpy is timed first and again last, so a drift over the probe
shows. Every copy is compared with its input before it is timed. Writes the samples and the
summaries into a probe record (``copy_ceiling_<mode>``, :mod:`reporter.harness.probe`) and prints a
table. Run on the GPU node from the repo root.

``variants`` times, on the fp32 array only, the 16-byte copy with 1 and 4 loads in flight per
thread, and the bulk ring with larger tiles and deeper rings (dynamic shared memory), with each
block's tiles in one contiguous run (ORDER 1), and with the evict-first L2 policy (HINT 1).
``hints`` times, on the fp32 array only, the 16-byte copy with the non-coherent, no-L1, 256-byte
L2-prefetch load (``copy_vec4_nc``) and the bulk ring with tiles prefetched into L2 ahead of the
ring (PREFETCH).
``order`` times, on both arrays, the bulk ring with its tiles dealt in advance (v07's order) beside
the same ring with the tiles handed out in order by an atomic counter (``copy_bulk_dyn``), so the
tiles in flight stay one window of consecutive addresses, as a copy engine walks the array.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kernels" / "transform"))
sys.path.insert(0, str(ROOT))
VERSIONS = ("v03_fast_math", "v06_one_launch", "v07_bulk", "v08_launch_plan", "v10_hw_cvt")
BULK = ({"TILE_BYTES": 8192, "STAGES": 4, "BLOCKS_PER_SM": 4}, {"TILE_BYTES": 16384, "STAGES": 2, "BLOCKS_PER_SM": 4},
        {"TILE_BYTES": 8192, "STAGES": 4, "BLOCKS_PER_SM": 6})
VARIANT_VEC4 = ({"UNROLL": 1, "BLOCKS_PER_SM": 8}, {"UNROLL": 4, "BLOCKS_PER_SM": 4}, {"UNROLL": 4, "BLOCKS_PER_SM": 8})
VARIANT_BULK = tuple({"TILE_BYTES": t, "STAGES": s, "BLOCKS_PER_SM": b, "ORDER": o, "HINT": h} for t, s, b, o, h in (
    (8192, 4, 4, 0, 0), (8192, 4, 4, 1, 0), (8192, 4, 4, 0, 1), (16384, 4, 3, 0, 0), (32768, 3, 2, 0, 0),
    (65536, 3, 1, 0, 0), (4096, 4, 8, 0, 0), (16384, 4, 3, 1, 1)))
HINT_VEC4 = ({"UNROLL": 1, "BLOCKS_PER_SM": 8}, {"UNROLL": 4, "BLOCKS_PER_SM": 4}, {"UNROLL": 2, "BLOCKS_PER_SM": 8})
ORDER_BULK = ({"TILE_BYTES": 8192, "STAGES": 2, "BLOCKS_PER_SM": 4}, {"TILE_BYTES": 8192, "STAGES": 4, "BLOCKS_PER_SM": 4},
              {"TILE_BYTES": 16384, "STAGES": 4, "BLOCKS_PER_SM": 3}, {"TILE_BYTES": 4096, "STAGES": 4, "BLOCKS_PER_SM": 8})
HINT_BULK = tuple({"TILE_BYTES": t, "STAGES": s, "BLOCKS_PER_SM": b, "PREFETCH": f} for t, s, b, f in (
    (8192, 4, 4, 0), (8192, 4, 4, 4), (8192, 4, 4, 8), (4096, 4, 8, 0), (4096, 4, 8, 8), (16384, 2, 4, 4)))


def main() -> int:
    import importlib

    import assignment as A
    import numpy as np
    import torch
    from triton.testing import do_bench

    from reporter.cuda import load_module
    from reporter.harness.probe import ProbeSession
    from reporter.harness.timing import CudaEventTimer, L2Flusher, StoppingRule, benchmark

    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    source = ROOT / "kernels" / "transform" / "probes.cu"
    inc = ()  # probes.cu finds kernels/common/ from its own folder

    variants = sys.argv[1:] == ["variants"]
    hints = sys.argv[1:] == ["hints"]
    order = sys.argv[1:] == ["order"]
    mode = "variants" if variants else "hints" if hints else "order" if order else "versions"
    session = ProbeSession(f"copy_ceiling_{mode}", __file__, cuda_sources=[source])

    def vec4(cfg: dict[str, int], kernel: str = "copy_vec4"):
        mod = load_module(source, defines={"UNROLL": cfg["UNROLL"]}, options=inc)

        def run(x: torch.Tensor) -> torch.Tensor:
            y = torch.empty_like(x)
            n16 = x.numel() * x.element_size() // 16
            mod.kernel(kernel)((sms * cfg["BLOCKS_PER_SM"],), (256,), x, y, np.uint64(n16))
            return y
        return run

    def bulk(cfg: dict[str, int]):
        defines = {k: cfg.get(k, 0) for k in ("TILE_BYTES", "STAGES", "ORDER", "HINT", "PREFETCH")}
        mod = load_module(source, defines=defines, options=inc)

        def run(x: torch.Tensor) -> torch.Tensor:
            y = torch.empty_like(x)
            tiles = x.numel() * x.element_size() // cfg["TILE_BYTES"]
            mod.kernel("copy_bulk")((min(tiles, sms * cfg["BLOCKS_PER_SM"]),), (32,), x, y, np.uint64(tiles),
                                    shared_mem=cfg["TILE_BYTES"] * cfg["STAGES"])
            return y
        return run

    counters = torch.zeros(2, dtype=torch.int32, device="cuda")

    def bulk_dyn(cfg: dict[str, int]):
        mod = load_module(source, defines={"TILE_BYTES": cfg["TILE_BYTES"], "STAGES": cfg["STAGES"]}, options=inc)

        def run(x: torch.Tensor) -> torch.Tensor:
            y = torch.empty_like(x)
            tiles = x.numel() * x.element_size() // cfg["TILE_BYTES"]
            mod.kernel("copy_bulk_dyn")((min(tiles, sms * cfg["BLOCKS_PER_SM"]),), (32,), x, y, np.uint64(tiles),
                                        counters, shared_mem=cfg["TILE_BYTES"] * cfg["STAGES"])
            return y
        return run

    def bulk_name(cfg: dict[str, int]) -> str:
        extra = "".join(f" {k}" for k in ("ORDER", "HINT") if cfg.get(k)) + \
            (f" PREFETCH {cfg['PREFETCH']}" if cfg.get("PREFETCH") else "")
        return f"copy_bulk {cfg['TILE_BYTES'] // 1024}K x{cfg['STAGES']} @{cfg['BLOCKS_PER_SM']}{extra}"

    flusher = L2Flusher(props.L2_cache_size)
    out: dict = {"gpu": torch.cuda.get_device_name(), "mode": mode, "runs": {}}
    for case in ("benchmark",) if variants or hints else ("benchmark", "benchmark_bf16"):
        x = A.generate_input(**A.CASES[case])
        fns: dict = {"memcpy": lambda: A._copy(x)}
        for cfg in VARIANT_VEC4 if variants else ({"UNROLL": 1, "BLOCKS_PER_SM": 8},):
            fns[f"copy_vec4 x{cfg['UNROLL']} @{cfg['BLOCKS_PER_SM']}"] = (lambda f: (lambda: f(x)))(vec4(cfg))
        for cfg in HINT_VEC4 if hints else ():
            fns[f"copy_vec4_nc x{cfg['UNROLL']} @{cfg['BLOCKS_PER_SM']}"] = \
                (lambda f: (lambda: f(x)))(vec4(cfg, "copy_vec4_nc"))
        for cfg in VARIANT_BULK if variants else HINT_BULK if hints else ORDER_BULK if order else BULK:
            fns[bulk_name(cfg)] = (lambda f: (lambda: f(x)))(bulk(cfg))
            if order:
                fns[bulk_name(cfg) + " in order"] = (lambda f: (lambda: f(x)))(bulk_dyn(cfg))
        for name in () if variants or hints or order else VERSIONS:
            mod = importlib.import_module(name)
            fns[name] = (lambda m: (lambda: m.custom_kernel(x)))(mod)
        fns["memcpy again"] = fns["memcpy"]
        for name, fn in fns.items():
            r = fn()
            torch.cuda.synchronize()
            if name.startswith("copy"):
                assert torch.equal(r, x), f"{name} did not copy {case}"
            rule = StoppingRule(min_reps=100, max_reps=100, target_rel_stderr=0.0, budget_s=1e9, warmup_reps=3,
                                rest_s=3.0)
            times = list(benchmark(lambda rep, f=fn: f(), timer=CudaEventTimer(), rule=rule, flush=flusher).samples_ms)
            out["runs"][f"{case} {name}"] = {"per_call_ms": times, "mean_ms": statistics.mean(times),
                                            "median_ms": statistics.median(times),
                                            "do_bench_ms": do_bench(fn, warmup=25, rep=200)}
        del x
    path = session.write(out, description=(
        f"Mode {mode}: the memcpy peer (first and last) against SM kernels that only copy (kernels/transform/probes.cu)"
        + ("" if variants or hints or order else " and transform's " + ", ".join(VERSIONS))
        + ", each through the harness's timing loop (3 s rest, 3 warm-up calls, 100 calls after the L2 flush: "
        "per_call_ms, mean_ms, median_ms) and with triton.testing.do_bench (do_bench_ms)."))
    print(f"wrote {path}")
    print(f"{'':40s} {'mean':>9s} {'median':>9s} {'do_bench':>9s}  (ms)")
    for name, r in out["runs"].items():
        print(f"{name:40s} {r['mean_ms']:9.4f} {r['median_ms']:9.4f} {r['do_bench_ms']:9.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
