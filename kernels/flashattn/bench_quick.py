"""Quick check-and-time of the flash-attention versions on one GPU, outside the reporter harness.

For each version (and each configuration asked for), the output on (1, 64, 1024, 128) is
checked against an fp32 reference (rtol = atol = 1e-2, the assignment's tolerance), then
the benchmark case (4, 64, 8192, 128) fp16 is timed with CUDA events, an L2 flush before
every call, warm-up first, and the median reported beside torch SDPA (cuDNN and
FlashAttention-2 backends) timed in the same run. The benchmark output is also compared
with cuDNN's. A version or configuration that fails to compile, launch or check is
reported and skipped; the rest still run.

    python3 kernels/flashattn/bench_quick.py                      # CONFIG of every version
    python3 kernels/flashattn/bench_quick.py --sweep v06,v07      # every SWEEP entry of those
    python3 kernels/flashattn/bench_quick.py --versions v05 --reps 50
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
import time
import traceback

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

VERSIONS = sorted(os.path.splitext(f)[0] for f in os.listdir(HERE) if f[:1] == "v" and f[1:3].isdigit() and f.endswith(".py"))
# (attic/ holds the Triton warp-specialised attempts that hung)
SEED = 1118
CHECK_SHAPE = (1, 64, 1024, 128)
BENCH_SHAPE = (4, 64, 8192, 128)
TOL = 1e-2


def generate(b, h, s, d, seed=SEED):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return tuple(torch.randn(b, h, s, d, dtype=torch.float16, device="cuda", generator=gen) for _ in range(3))


def reference(q, k, v, heads_per_chunk=8):
    b, h, s, d = q.shape
    out = torch.empty_like(q)
    qf, kf, vf = (x.reshape(b * h, s, d) for x in (q, k, v))
    of = out.view(b * h, s, d)
    for i in range(0, b * h, heads_per_chunk):
        sl = slice(i, i + heads_per_chunk)
        p = torch.softmax(torch.matmul(qf[sl].float(), kf[sl].float().transpose(1, 2)) / math.sqrt(d), dim=-1)
        of[sl] = torch.matmul(p, vf[sl].float()).to(q.dtype)
    return out


def compare(out, ref):
    diff = (out.float() - ref.float()).abs()
    bad = diff > TOL + TOL * ref.float().abs()
    finite = bool(torch.isfinite(out).all())
    return finite and not bool(bad.any()), float(diff.max()), int(bad.sum())


def time_ms(fn, data, reps, warmup=3):
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn(data)
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(data)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    samples.sort()
    return samples[len(samples) // 2], samples[0]


def sdpa(backend):
    def run(data):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        q, k, v = data
        with sdpa_kernel(getattr(SDPBackend, backend)):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=False)

    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--versions", default=",".join(VERSIONS), help="comma-separated prefixes, e.g. v05,v06")
    ap.add_argument("--sweep", default="", help="versions whose whole SWEEP is timed (others: CONFIG only)")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    wanted = [w for w in args.versions.split(",") if w]
    sweep = [w for w in args.sweep.split(",") if w]

    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}", end="")
    try:
        import triton
        print(f"  triton {triton.__version__}")
    except Exception:
        print()
    b, h, s, d = BENCH_SHAPE
    flops = 4.0 * b * h * s * s * d
    small = generate(*CHECK_SHAPE)
    small_ref = reference(*small)
    big = generate(*BENCH_SHAPE)
    rows = []

    def bench(name, cfg_text, fn):
        t0 = time.time()
        try:
            out = fn(small)
            torch.cuda.synchronize()
            ok, err, nbad = compare(out, small_ref)
            if not ok:
                rows.append((name, cfg_text, f"FAIL max|err| {err:.3g}, {nbad} bad", None, None, None))
                print(f"  {name} {cfg_text}: check FAILED (max err {err:.3g}, {nbad} mismatches)", flush=True)
                return
            out_big = fn(big)
            torch.cuda.synchronize()
            if "cudnn_out" in state:
                ok_big, err_big, nbad_big = compare(out_big, state["cudnn_out"])
                if not ok_big:
                    rows.append((name, cfg_text, f"FAIL big vs cuDNN {err_big:.3g}, {nbad_big} bad", None, None, None))
                    print(f"  {name} {cfg_text}: benchmark-case output differs from cuDNN (max {err_big:.3g})", flush=True)
                    return
            del out_big
            med, best = time_ms(fn, big, args.reps)
            rows.append((name, cfg_text, f"ok {err:.2g}", med, best, flops / med / 1e9))
            print(f"  {name} {cfg_text}: {med:.3f} ms ({flops / med / 1e9:.0f} TFLOP/s)  [{time.time() - t0:.0f}s]",
                  flush=True)
        except Exception as e:
            msg = f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
            rows.append((name, cfg_text, "ERROR " + msg, None, None, None))
            print(f"  {name} {cfg_text}: {msg}", flush=True)
            traceback.print_exc(limit=2)
        torch.cuda.synchronize()

    state = {}
    try:
        state["cudnn_out"] = sdpa("CUDNN_ATTENTION")(big)
    except Exception:
        pass
    for peer in ("CUDNN_ATTENTION", "FLASH_ATTENTION"):
        bench(f"sdpa_{peer.split('_')[0].lower()}", "", sdpa(peer))

    for stem in VERSIONS:
        if not any(stem.startswith(w) for w in wanted):
            continue
        try:
            mod = importlib.import_module(stem)
        except Exception as e:
            rows.append((stem, "", f"IMPORT ERROR {type(e).__name__}: {e}", None, None, None))
            print(f"{stem}: import failed: {e}", flush=True)
            continue
        print(stem, flush=True)
        configs = [getattr(mod, "CONFIG", None)]
        if any(stem.startswith(w) for w in sweep) and hasattr(mod, "SWEEP"):
            configs += [c for c in mod.SWEEP if c != mod.CONFIG]
        for cfg in configs:
            if cfg is None:
                bench(stem, "", mod.custom_kernel)
            else:
                text = " ".join(f"{k}={v}" for k, v in cfg.items())
                bench(stem, text, mod.make_kernel(cfg))

    cudnn = next((r[3] for r in rows if r[0] == "sdpa_cudnn" and r[3]), None)
    print()
    print(f"{'version':<18} {'config':<58} {'check':<14} {'median ms':>10} {'min ms':>8} {'TFLOP/s':>8} {'vs cuDNN':>8}")
    for name, cfg, check, med, best, tf in rows:
        if med is None:
            print(f"{name:<18} {cfg:<58} {check}")
        else:
            rel = f"{cudnn / med:.3f}x" if cudnn else "-"
            print(f"{name:<18} {cfg:<58} {check:<14} {med:>10.3f} {best:>8.3f} {tf:>8.0f} {rel:>8}")


if __name__ == "__main__":
    main()
