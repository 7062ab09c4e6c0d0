#!/usr/bin/env python3
"""On-GPU self-test of v06_wgmma: compile, debug modes with descriptor retries, checks.

Every stage runs in its own subprocess with a timeout, so a ``trap`` (the kernel's
HANG_TRAP), an illegal address or a hang in one stage loses nothing else; the parent prints
a summary table at the end and writes ``$OUT/wgmma_selftest.json`` when ``$OUT`` is set.

  compile  NVRTC-compile DBG_MODE 0, 1, 2 and the EXTRA_CONFIGS (STAGES=3, INTRA_WG_OVERLAP=1,
           PROXY_FENCE=0); registers, local memory (spills / stack), shared memory as the driver
           reports them (and ``nvcc -Xptxas -v`` where nvcc exists)
  mode1    S = Q·Kᵀ of kv tile 0 on (1, 2, 256, 128), NaN-poisoned fp32 output, vs torch;
           if wrong: a diagnosis (8×8 block error map, known permutations, the K and Q the
           kernel effectively read, recovered by least squares and matched 16-byte chunk by
           chunk) and retries with other K-descriptor strides until one matches
  mode2    fp16(S/√D)·V of tile 0 (no softmax) with the K strides mode1 settled on; on
           failure the same diagnosis for V / P and retries with other V-descriptor strides
  mode0    full attention with the settled strides: (1, 2, 256, 128), test_small, test_medium
           against the assignment's ref_kernel and tolerance, outputs NaN-poisoned; then the
           EXTRA_CONFIGS on (1, 2, 256, 128) and test_small

  v07      v07_pingpong: compile every SWEEP config (NVRTC attributes + nvcc ptxas report), then
           v07 as configured on (1, 2, 256, 128), test_small, test_medium and the other SWEEP
           configs on (1, 2, 256, 128) and test_small (NaN-poisoned, assignment tolerance).
           Skipped in fake mode.

Timing is not a stage: the harness does it, with the check and the peers, for v06 as
configured and for every configuration of a SWEEP (nothing written with --quick):

    report run flashattn -v v06 -c benchmark --quick
    report sweep flashattn v06 --quick; report sweep flashattn v07 --quick

    python3 kernels/flashattn/wgmma_selftest.py                   # all stages, under 4 minutes
    python3 kernels/flashattn/wgmma_selftest.py --only compile,v07   # skip v06's debug modes
    python3 kernels/flashattn/wgmma_selftest.py --only mode1,mode2
    python3 kernels/flashattn/wgmma_selftest.py --stage mode1 --payload '{"candidates": [{}]}'  # in-process
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for _p in (str(ROOT), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

MARK = "@@RESULT "
SEED = 1118
DEBUG_SHAPE = (1, 2, 256, 128)
TOTAL_BUDGET_S = 225.0  # the whole self-test stays under 4 minutes
STAGE_TIMEOUT_S = {"compile": 90, "mode1": 60, "mode2": 60, "mode0": 90, "v07": 120}
STAGES_ALL = ["compile", "mode1", "mode2", "mode0", "v07"]
CHUNK_TOL = 0.1  # matching recovered operand chunks: least squares through a square random matrix loses digits
# WGMMA_SELFTEST_FAKE=1 runs every stage on the CPU against an emulation of the kernel (torch
# math), to test this script without a GPU; WGMMA_FAKE_TRUTH='{"V_LBO": 1024, "V_SBO": 16384}'
# makes the emulated hardware accept only those strides (wrong ones swap the d halves), and
# WGMMA_FAKE_CRASH='{"V_SBO": 2048}' kills the process on a launch with those defines.
FAKE = os.environ.get("WGMMA_SELFTEST_FAKE") == "1"
# other v06 configurations, checked on small cases and timed after v06 as configured:
# the swept ring depth, the (default-off) intra-warpgroup overlap, and no proxy fence
EXTRA_CONFIGS: list[dict[str, int]] = [{"STAGES": 3}, {"INTRA_WG_OVERLAP": 1}, {"PROXY_FENCE": 0}]

K_DEFAULT = {"K_LBO": 16, "K_SBO": 1024}
V_DEFAULT = {"V_LBO": 16384, "V_SBO": 1024}
# plausible other readings of the PTX descriptor fields, most likely first
K_ALTERNATIVES: list[dict[str, int]] = [
    {"K_LBO": 1024, "K_SBO": 16},     # LBO and SBO swapped
    {"K_LBO": 16, "K_SBO": 2048},
    {"K_LBO": 16, "K_SBO": 512},
    {"K_LBO": 16384, "K_SBO": 1024},  # LBO = the 64-column half stride
    {"K_LBO": 0, "K_SBO": 1024},
]
V_ALTERNATIVES: list[dict[str, int]] = [
    {"V_LBO": 1024, "V_SBO": 16384},  # LBO and SBO swapped (d-halves <-> 8-row kv groups)
    {"V_LBO": 16384, "V_SBO": 2048},
    {"V_LBO": 8192, "V_SBO": 1024},
    {"V_LBO": 2048, "V_SBO": 16384},
    {"V_LBO": 16384, "V_SBO": 512},
]


# =========================================================================== helpers (pure, CPU-testable)


def emit(record: dict[str, Any]) -> None:
    """One machine-readable result line for the parent."""
    print(MARK + json.dumps(record, default=str), flush=True)


def parse_results(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        if line.startswith(MARK):
            try:
                out.append(json.loads(line[len(MARK):]))
            except json.JSONDecodeError:
                pass
    return out


def block_error_map(out: Any, ref: Any, tol: float, rows: int = 128, block: int = 8) -> list[str]:
    """Character map of 8×8 blocks of the first `rows` rows: '.' ok, 'X' wrong, 'N' has NaN."""
    import torch

    o = out[:rows].double().cpu()
    r = ref[:rows].double().cpu()
    err = (o - r).abs()
    nan = torch.isnan(o)
    R, C = o.shape
    lines = []
    for bi in range(0, R, block):
        line = []
        for bj in range(0, C, block):
            if bool(nan[bi:bi + block, bj:bj + block].any()):
                line.append("N")
            elif float(torch.nan_to_num(err[bi:bi + block, bj:bj + block], nan=1e30).max()) > tol:
                line.append("X")
            else:
                line.append(".")
        lines.append("".join(line))
    return lines


def match_groups(out: Any, ref: Any, axis: int, group: int, tol: float) -> tuple[list[int], float]:
    """For each group of `group` rows (axis 0) or columns (axis 1) of `out`, the index of the
    group of `ref` it matches best; and the fraction of groups matched within `tol`."""
    import torch

    o = out.double().cpu()
    r = ref.double().cpu()
    if axis == 1:
        o, r = o.T, r.T
    n = o.shape[0] // group
    og = o[: n * group].reshape(n, -1)
    rg = r[: n * group].reshape(n, -1)
    dist = torch.cdist(torch.nan_to_num(og, nan=1e30), rg, p=float("inf"))
    best = dist.min(dim=1)
    mapping = [int(x) for x in best.indices]
    frac = float((best.values <= tol).double().mean())
    return mapping, frac


def chunk_map(x_eff: Any, x: Any, tol: float, chunk: int = 8) -> dict[str, Any]:
    """Which 8-element chunk (16 bytes, the swizzle granule) of `x` each chunk of `x_eff`
    holds, chunks taken along the contiguous (last) dimension. Summarised as the fraction
    matched, the most common (row shift, chunk shift) pairs, and the map of the first rows."""
    import torch

    xe = x_eff.double().cpu()
    xr = x.double().cpu()
    R, C = xr.shape
    nc = C // chunk
    ce = xe.reshape(R * nc, chunk)
    cr = xr.reshape(R * nc, chunk)
    dist = torch.cdist(torch.nan_to_num(ce, nan=1e30), cr, p=float("inf"))
    best = dist.min(dim=1)
    ok = best.values <= tol
    shifts: Counter[tuple[int, int]] = Counter()
    for idx in range(R * nc):
        if bool(ok[idx]):
            i, c = divmod(idx, nc)
            i2, c2 = divmod(int(best.indices[idx]), nc)
            shifts[(i2 - i, c2 - c)] += 1
    first = []
    for i in range(min(R, 16)):
        toks = []
        for c in range(nc):
            idx = i * nc + c
            if bool(ok[idx]):
                i2, c2 = divmod(int(best.indices[idx]), nc)
                toks.append(f"{i2:3d}:{c2:<2d}")
            else:
                toks.append("  ?   ")
        first.append(f"row {i:3d} -> " + " ".join(toks))
    # the same against the transpose (an operand read in the other major order)
    crt = xr.T.contiguous().reshape(R * nc, chunk)
    frac_t = float((torch.cdist(torch.nan_to_num(ce, nan=1e30), crt, p=float("inf")).min(dim=1).values <= tol)
                   .double().mean())
    return {
        "matched_fraction": float(ok.double().mean()),
        "identity": bool(ok.all()) and shifts == Counter({(0, 0): R * nc}),
        "top_shifts (drow, dchunk): count": [(list(k), v) for k, v in shifts.most_common(6)],
        "matched_fraction_vs_transpose": frac_t,
        "map_first_rows (row:chunk of the source)": first,
    }


def known_permutations(out: Any, ref: Any, tol: float) -> dict[str, Any]:
    """Does `out` (2-D, [rows, 128]) equal `ref` up to a simple permutation?"""
    import torch

    o = out.double().cpu()
    r = ref.double().cpu()
    res: dict[str, Any] = {}
    res["d_halves_swapped"] = bool(torch.nan_to_num((o - r.roll(64, dims=1)).abs(), nan=1e30).max() <= tol)
    res["transposed_128_blocks"] = False
    if o.shape[0] >= 128:
        res["transposed_128_blocks"] = bool(torch.nan_to_num((o[:128] - r[:128].T).abs(), nan=1e30).max() <= tol)
    for axis, name in ((0, "row"), (1, "col")):
        for g in (8, 16, 64):
            mapping, frac = match_groups(o, r, axis, g, tol)
            res[f"{name}_groups_of_{g}: matched_fraction"] = round(frac, 4)
            if frac == 1.0 and mapping != list(range(len(mapping))):
                res[f"{name}_groups_of_{g}: permutation"] = mapping[:32]
    # single rows / columns permuted inside their group of 8?
    for axis, name in ((0, "rows"), (1, "cols")):
        mapping, frac = match_groups(o, r, axis, 1, tol)
        inside = all(m // 8 == i // 8 for i, m in enumerate(mapping))
        res[f"single_{name}: matched_fraction"] = round(frac, 4)
        if frac == 1.0 and mapping != list(range(len(mapping))):
            res[f"single_{name}: permutation (first 32)"] = mapping[:32]
            res[f"single_{name}: permuted within 8"] = inside
    return res


def format_diag(diag: dict[str, Any], indent: str = "    ") -> list[str]:
    """Readable lines for a diagnosis dict: lists of strings as blocks, the rest one per line."""
    lines = []
    for key, val in diag.items():
        if isinstance(val, dict):
            lines.append(f"{indent}{key}:")
            lines += format_diag(val, indent + "  ")
        elif isinstance(val, list) and val and all(isinstance(x, str) for x in val):
            lines.append(f"{indent}{key}:")
            lines += [f"{indent}  {x}" for x in val]
        else:
            lines.append(f"{indent}{key}: {json.dumps(val, default=str)}")
    return lines


def compare_debug(out: Any, ref: Any) -> dict[str, Any]:
    """Max abs error, NaN count and pass/fail for a debug-mode output (fp32, [rows, 128])."""
    import torch

    o = out.double()
    r = ref.double()
    nan = int(torch.isnan(o).sum())
    err = torch.nan_to_num((o - r).abs(), nan=float("inf"))
    ref_max = float(r.abs().max())
    tol = 2e-3 * ref_max + 1e-3
    max_err = float(err.max())
    return {"ok": nan == 0 and max_err <= tol, "max_abs_err": max_err, "tol": tol, "nan_count": nan,
            "ref_abs_max": ref_max}


# =========================================================================== child stages (GPU)


def _v06() -> Any:
    import v06_wgmma

    return v06_wgmma


def _device() -> str:
    return "cpu" if FAKE else "cuda"


def _sync() -> None:
    if not FAKE:
        import torch

        torch.cuda.synchronize()


def _inputs(shape: tuple[int, int, int, int], seed: int = SEED) -> tuple[Any, Any, Any]:
    import assignment

    b, h, s, d = shape
    return assignment.generate_input(batch_size=b, num_heads=h, seq_len=s, head_dim=d, seed=seed, device=_device())


def _fake_launch(q: Any, k: Any, v: Any, defines: dict[str, Any], out: Any, dbg: Any) -> None:
    """CPU stand-in for the kernel: right results when the strides equal WGMMA_FAKE_TRUTH's."""
    import torch

    truth = {**K_DEFAULT, **V_DEFAULT, **json.loads(os.environ.get("WGMMA_FAKE_TRUTH", "{}"))}
    full = {**K_DEFAULT, **V_DEFAULT, **defines}
    crash = json.loads(os.environ.get("WGMMA_FAKE_CRASH", "null") or "null")
    if crash and all(full.get(key) == val for key, val in crash.items()):
        os._exit(3)  # as a dead CUDA context would end the process: no result line
    k_ok = all(full[x] == truth[x] for x in K_DEFAULT)
    v_ok = all(full[x] == truth[x] for x in V_DEFAULT)
    b, h, s, d = q.shape
    qf = q.reshape(b * h, s, d).float()
    kf = k.reshape(b * h, s, d).float()
    vf = v.reshape(b * h, s, d).float()
    if not k_ok:
        kf = kf.roll(64, dims=2)
    if not v_ok:
        vf = vf.roll(64, dims=2)
    mode = int(full.get("DBG_MODE", 0))
    if mode == 1:
        dbg.copy_((qf @ kf[:, :128].transpose(1, 2)).reshape(b * h * s, 128))
    elif mode == 2:
        p = ((qf @ kf[:, :128].transpose(1, 2)) * (1.0 / math.sqrt(d))).half().float()
        dbg.copy_((p @ vf[:, :128]).reshape(b * h * s, d))
    else:
        p = torch.softmax((qf @ kf.transpose(1, 2)) / math.sqrt(d), dim=-1)
        out.copy_((p @ vf).reshape(q.shape).half())


def _launch(q: Any, k: Any, v: Any, *, defines: dict[str, Any], config: dict[str, Any] | None = None,
            out: Any = None, dbg: Any = None) -> None:
    v06 = _v06()
    cfg = dict(v06.CONFIG if config is None else config)
    if FAKE:
        _fake_launch(q, k, v, {**cfg, **defines}, out, dbg)
    else:
        v06.launch(q, k, v, config=cfg, defines=defines, out=out, dbg=dbg)


def _run_debug(mode: int, defines: dict[str, Any], data: tuple[Any, Any, Any]) -> Any:
    import torch

    q, k, v = data
    b, h, s, d = q.shape
    dbg = torch.full((b * h * s, d), float("nan"), dtype=torch.float32, device=q.device)
    _launch(q, k, v, defines={**defines, "DBG_MODE": mode}, dbg=dbg)
    _sync()
    return dbg


def _ref_s_tile0(q: Any, k: Any) -> Any:
    b, h, s, d = q.shape
    qf = q.reshape(b * h, s, d).double()
    kf = k.reshape(b * h, s, d)[:, :128].double()
    return (qf @ kf.transpose(1, 2)).reshape(b * h * s, 128)  # [B*H*S, 128]


def _diagnose_mode1(out: Any, data: tuple[Any, Any, Any], ref: Any, tol: float) -> dict[str, Any]:
    import torch

    q, k, _ = data
    b, h, s, d = q.shape
    o0 = out[:s].double().cpu()  # head 0: [S, 128 kv]
    q0 = q.reshape(b * h, s, d)[0].double().cpu()
    k0 = k.reshape(b * h, s, d)[0, :128].double().cpu()
    diag: dict[str, Any] = {"block_map_head0_first128rows": block_error_map(out, ref, tol),
                            "permutations": known_permutations(out[:s], ref[:s], tol)}
    if bool(torch.isfinite(o0).all()):
        # if Q was read right: S = Q K_effᵀ -> K_effᵀ = lstsq(Q, S)
        k_eff = torch.linalg.lstsq(q0, o0).solution.T  # [128 kv, 128 d]
        diag["K_effective_vs_K (assumes Q read right)"] = chunk_map(k_eff, k0, CHUNK_TOL)
        # if K was read right: Sᵀ = K Q_effᵀ -> Q_effᵀ = solve(K, Sᵀ)
        q_eff = torch.linalg.solve(k0, o0.T).T  # [S, 128 d]
        diag["Q_effective_vs_Q, first 128 rows (assumes K read right)"] = chunk_map(q_eff[:128], q0[:128], CHUNK_TOL)
    return diag


def _diagnose_mode2(out: Any, data: tuple[Any, Any, Any], p16: Any, ref: Any, tol: float) -> dict[str, Any]:
    import torch

    q, _, v = data
    b, h, s, d = q.shape
    o0 = out[:s].double().cpu()
    p0 = p16[:s].double().cpu()                               # [S, 128 kv], the P the reference used
    v0 = v.reshape(b * h, s, d)[0, :128].double().cpu()       # [128 kv, 128 d]
    diag: dict[str, Any] = {"block_map_head0_first128rows": block_error_map(out, ref, tol),
                            "permutations": known_permutations(out[:s], ref[:s], tol)}
    if bool(torch.isfinite(o0).all()):
        v_eff = torch.linalg.lstsq(p0, o0).solution          # O = P V_eff
        diag["V_effective_vs_V (assumes P fragment right)"] = chunk_map(v_eff, v0, CHUNK_TOL)
        p_eff = torch.linalg.solve(v0.T, o0.T).T             # O = P_eff V
        diag["P_effective_vs_P, first 128 rows (assumes V read right)"] = chunk_map(p_eff[:128], p0[:128], CHUNK_TOL)
    return diag


def child_compile(payload: dict[str, Any]) -> None:
    v06 = _v06()
    from reporter.cuda import load_module, ptxas_report

    base = dict(payload.get("defines", {}))
    variants = [("mode0", {"DBG_MODE": 0}), ("mode1", {"DBG_MODE": 1}), ("mode2", {"DBG_MODE": 2})]
    variants += [("mode0 " + ",".join(f"{k}={v}" for k, v in extra.items()), {"DBG_MODE": 0, **extra})
                 for extra in EXTRA_CONFIGS]
    nvcc = shutil.which("nvcc")
    for name, extra in variants:
        defines = {**v06.CONFIG, **base, **extra}
        rec: dict[str, Any] = {"stage": "compile", "variant": name, "defines": defines}
        try:
            if FAKE:  # no NVRTC here: nvcc's ptxas report only
                rows = ptxas_report(v06.SOURCE, arch="sm_90a", defines=defines) if nvcc else []
                rec.update(ok=True, attributes={"num_regs": rows[0].registers if rows else None,
                                                "local_size_bytes": rows[0].stack_bytes if rows else None},
                           ptxas=[r.__dict__ for r in rows], compile_s=0.0)
                print(f"[compile] {name} (fake, ptxas only): {rec['ptxas']}", flush=True)
                emit(rec)
                continue
            t0 = time.perf_counter()
            mod = load_module(v06.SOURCE, defines=defines)
            kern = mod.kernel(v06.KERNEL_NAME)
            rec["compile_s"] = round(time.perf_counter() - t0, 2)
            rec["attributes"] = kern.attributes
            rec["nvrtc_log"] = (mod.log or "").strip()[-2000:]
            a = rec["attributes"]
            rec["ok"] = True
            print(f"[compile] {name}: {a['num_regs']} regs/thread (launch), local {a['local_size_bytes']} B "
                  f"(spills/stack), static smem {a['shared_size_bytes']} B, {rec['compile_s']} s", flush=True)
            if rec["nvrtc_log"]:
                print(f"[compile] {name} NVRTC log:\n{rec['nvrtc_log']}", flush=True)
            if nvcc:
                rows = ptxas_report(v06.SOURCE, arch="sm_90a", defines=defines)
                rec["ptxas"] = [r.__dict__ for r in rows]
                for r in rows:
                    print(f"[compile] {name} ptxas: {r.registers} regs, spills {r.spill_stores}/{r.spill_loads} B, "
                          f"stack {r.stack_bytes} B", flush=True)
        except Exception as e:  # noqa: BLE001 - report and continue with the next variant
            rec["ok"] = False
            rec["error"] = f"{type(e).__name__}: {e}"[-3000:]
            print(f"[compile] {name} FAILED: {rec['error']}", flush=True)
        emit(rec)


def child_debug(mode: int, payload: dict[str, Any]) -> None:
    """Run DBG_MODE `mode` for each candidate define set in turn; one result line each."""
    import torch

    data = _inputs(DEBUG_SHAPE, seed=SEED)
    q, k, v = data
    b, h, s, d = q.shape
    s_ref = _ref_s_tile0(q, k)
    sm_scale = 1.0 / math.sqrt(d)
    if mode == 1:
        ref = s_ref
    else:
        p16 = (s_ref.float() * torch.tensor(sm_scale, dtype=torch.float32, device=q.device)).half()
        vt = v.reshape(b * h, s, d)[:, :128].double()
        ref = (p16.reshape(b * h, s, 128).double() @ vt).reshape(b * h * s, d)
    for cand in payload["candidates"]:
        rec: dict[str, Any] = {"stage": f"mode{mode}", "defines": cand}
        try:
            out = _run_debug(mode, cand, data)
            rec.update(compare_debug(out, ref))
            status = "MATCH" if rec["ok"] else "WRONG"
            print(f"[mode{mode}] {cand}: {status}, max abs err {rec['max_abs_err']:.3g} (tol {rec['tol']:.3g}), "
                  f"NaN {rec['nan_count']}", flush=True)
            if not rec["ok"] and payload.get("diagnose", True):
                diag = (_diagnose_mode1(out, data, ref, rec["tol"]) if mode == 1
                        else _diagnose_mode2(out, data, p16, ref, rec["tol"]))
                rec["diagnosis"] = diag
                print("\n".join(format_diag(diag)), flush=True)
        except Exception as e:  # noqa: BLE001
            rec["ok"] = False
            rec["error"] = f"{type(e).__name__}: {e}"[-3000:]
            print(f"[mode{mode}] {cand}: ERROR {rec['error']}", flush=True)
            traceback.print_exc()
            emit(rec)
            if "CUDA" in str(e) or "cuda" in str(e):
                raise  # the context may be dead: let the parent start a fresh process
            continue
        emit(rec)
        if rec["ok"] and payload.get("stop_on_match", True):
            break


def child_mode0(payload: dict[str, Any]) -> None:
    import torch

    import assignment
    from reporter.compare import compare

    defines = dict(payload.get("defines", {}))
    debug = dict(batch_size=1, num_heads=2, seq_len=256, head_dim=128, seed=SEED)
    # (label, case parameters, extra defines): v06 as configured first, then the other
    # configurations (last, so that a crash in one of them loses nothing about v06 itself)
    cases: list[tuple[str, dict[str, Any], dict[str, Any]]] = [("debug_1x2x256", debug, {})]
    if not FAKE:  # the CPU emulation would take minutes on the assignment's cases
        cases += [(name, dict(assignment.CASES[name]), {}) for name in ("test_small", "test_medium")]
        for extra in EXTRA_CONFIGS:
            tag = ",".join(f"{k}={v}" for k, v in extra.items())
            cases += [(f"debug_1x2x256 [{tag}]", debug, extra),
                      (f"test_small [{tag}]", dict(assignment.CASES["test_small"]), extra)]
    for name, params, extra in cases:
        shape = [params[x] for x in ("batch_size", "num_heads", "seq_len", "head_dim")]
        rec: dict[str, Any] = {"stage": "mode0", "case": name, "shape": shape,
                               "extra_defines": extra}
        try:
            data = assignment.generate_input(**params, device=_device())
            ref = assignment.ref_kernel(data)
            q, k, v = data
            out = torch.full_like(q, float("nan"))  # poisoned: an unwritten element stays NaN
            t0 = time.perf_counter()
            _launch(q, k, v, defines={**defines, **extra}, out=out)
            _sync()
            rec["first_call_s"] = round(time.perf_counter() - t0, 3)
            res = compare(out, ref, assignment.TOLERANCE, seed=params["seed"])
            rec.update(ok=res.passed, max_abs_err=res.max_abs_error, mismatches=res.mismatches,
                       nan_count=res.nan_count, message=res.message)
            print(f"[mode0] {name}: {'PASS' if res.passed else 'FAIL'} max abs err {res.max_abs_error} "
                  f"mismatches {res.mismatches} NaN {res.nan_count} ({res.message})", flush=True)
            if not res.passed:
                b, h, s, d = q.shape
                o2 = out.reshape(b * h * s, d).float()
                r2 = ref.reshape(b * h * s, d).float()
                rec["block_map_head0_first128rows"] = block_error_map(o2, r2, 1e-2)
                print("\n".join(rec["block_map_head0_first128rows"]), flush=True)
            del data, ref, out
        except Exception as e:  # noqa: BLE001
            rec["ok"] = False
            rec["error"] = f"{type(e).__name__}: {e}"[-3000:]
            print(f"[mode0] {name}: ERROR {rec['error']}", flush=True)
            traceback.print_exc()
            emit(rec)
            raise
        emit(rec)
        if not FAKE:
            torch.cuda.empty_cache()


def _v07() -> Any:
    import v07_pingpong

    return v07_pingpong


def _tag(cfg: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in cfg.items())


def child_v07(payload: dict[str, Any]) -> None:
    """v07_pingpong: compile each SWEEP config, then mode-0 correctness (CONFIG first)."""
    if FAKE:
        print("[v07] skipped in fake mode (no emulation of v07)", flush=True)
        emit({"stage": "v07", "case": "skipped (fake mode)", "ok": True, "skipped": True})
        return
    import torch

    import assignment
    from reporter.cuda import load_module, ptxas_report
    from reporter.compare import compare

    v07 = _v07()
    nvcc = shutil.which("nvcc")
    for cfg in v07.SWEEP:
        rec: dict[str, Any] = {"stage": "v07", "case": f"compile [{_tag(cfg)}]", "defines": cfg}
        try:
            t0 = time.perf_counter()
            kern = load_module(v07.SOURCE, defines=cfg).kernel(v07.KERNEL_NAME)
            a = kern.attributes
            rec.update(ok=True, compile_s=round(time.perf_counter() - t0, 2), attributes=a)
            print(f"[v07] compile {_tag(cfg)}: {a['num_regs']} regs/thread, local {a['local_size_bytes']} B",
                  flush=True)
            if nvcc:
                rows = ptxas_report(v07.SOURCE, arch="sm_90a", defines=cfg)
                rec["ptxas"] = [r.__dict__ for r in rows]
                for r in rows:
                    print(f"[v07] ptxas {_tag(cfg)}: {r.registers} regs, spills {r.spill_stores}/{r.spill_loads} B, "
                          f"stack {r.stack_bytes} B", flush=True)
        except Exception as e:  # noqa: BLE001
            rec.update(ok=False, error=f"{type(e).__name__}: {e}"[-3000:])
            print(f"[v07] compile {_tag(cfg)} FAILED: {rec['error']}", flush=True)
        emit(rec)
    debug = dict(batch_size=1, num_heads=2, seq_len=256, head_dim=128, seed=SEED)
    cases: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("debug_1x2x256", debug, dict(v07.CONFIG)),
        ("test_small", dict(assignment.CASES["test_small"]), dict(v07.CONFIG)),
        ("test_medium", dict(assignment.CASES["test_medium"]), dict(v07.CONFIG))]
    for cfg in v07.SWEEP:
        if cfg != v07.CONFIG:  # other configs last: a trap in one loses nothing about CONFIG
            cases += [("debug_1x2x256", debug, cfg), ("test_small", dict(assignment.CASES["test_small"]), cfg)]
    for name, params, cfg in cases:
        label = f"{name} [{_tag(cfg)}]"
        rec = {"stage": "v07", "case": label, "defines": cfg, "is_config": cfg == v07.CONFIG}
        try:
            data = assignment.generate_input(**params, device="cuda")
            ref = assignment.ref_kernel(data)
            q, k, v = data
            out = torch.full_like(q, float("nan"))
            v07.launch(q, k, v, config=cfg, out=out)
            torch.cuda.synchronize()
            res = compare(out, ref, assignment.TOLERANCE, seed=params["seed"])
            rec.update(ok=res.passed, max_abs_err=res.max_abs_error, mismatches=res.mismatches,
                       nan_count=res.nan_count, message=res.message)
            print(f"[v07] {label}: {'PASS' if res.passed else 'FAIL'} max abs err {res.max_abs_error} "
                  f"mismatches {res.mismatches} NaN {res.nan_count}", flush=True)
            del data, ref, out
            torch.cuda.empty_cache()
        except Exception as e:  # noqa: BLE001
            rec.update(ok=False, error=f"{type(e).__name__}: {e}"[-3000:])
            print(f"[v07] {label}: ERROR {rec['error']}", flush=True)
            emit(rec)
            raise  # the context may be dead
        emit(rec)


def run_child_stage(stage: str, payload: dict[str, Any]) -> int:
    import torch

    if not FAKE and not torch.cuda.is_available():
        emit({"stage": stage, "ok": False, "error": "no CUDA device"})
        print(f"[{stage}] no CUDA device", flush=True)
        return 2
    if stage == "compile":
        child_compile(payload)
    elif stage == "mode1":
        child_debug(1, payload)
    elif stage == "mode2":
        child_debug(2, payload)
    elif stage == "mode0":
        child_mode0(payload)
    elif stage == "v07":
        child_v07(payload)
    else:
        raise SystemExit(f"unknown stage {stage}")
    return 0


# =========================================================================== parent


class Runner:
    def __init__(self, budget_s: float) -> None:
        self.t0 = time.monotonic()
        self.budget_s = budget_s
        self.log: list[dict[str, Any]] = []  # one entry per child process
        self.no_device = False

    def left(self) -> float:
        return self.budget_s - (time.monotonic() - self.t0)

    def child(self, stage: str, payload: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        """Run one stage in a subprocess; its result records and how it ended ('ok', 'exit N', 'timeout', 'skipped')."""
        timeout = min(STAGE_TIMEOUT_S[stage], self.left())
        if self.no_device:
            self.log.append({"stage": stage, "payload": payload, "status": "skipped", "why": "no CUDA device"})
            return [], "skipped"
        if timeout < 10:
            print(f"\n=== {stage}: skipped, {self.left():.0f} s of the budget left", flush=True)
            self.log.append({"stage": stage, "payload": payload, "status": "skipped"})
            return [], "skipped"
        print(f"\n=== {stage} (timeout {timeout:.0f} s) payload {json.dumps(payload)}", flush=True)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--stage", stage, "--payload", json.dumps(payload)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        t = time.monotonic()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=str(ROOT))
            text = proc.stdout + proc.stderr
            status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
        except subprocess.TimeoutExpired as e:
            out, err = e.stdout or "", e.stderr or ""
            text = (out.decode() if isinstance(out, bytes) else out) + (err.decode() if isinstance(err, bytes) else err)
            status = "timeout"
        wall = time.monotonic() - t
        shown = [line for line in text.splitlines() if not line.startswith(MARK)]
        if len(shown) > 200:
            shown = shown[:60] + [f"... ({len(shown) - 120} lines left out) ..."] + shown[-60:]
        for line in shown:
            print("  | " + line, flush=True)
        records = parse_results(text)
        print(f"=== {stage}: {status} in {wall:.1f} s, {len(records)} result(s)", flush=True)
        if any(r.get("error") == "no CUDA device" for r in records):
            self.no_device = True
        self.log.append({"stage": stage, "payload": payload, "status": status, "wall_s": round(wall, 1),
                         "records": records, "output_tail": "\n".join(text.splitlines()[-80:])})
        return records, status

    def debug_stage(self, stage: str, candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Run candidates until one matches; a crashed process is restarted on the ones after it."""
        done: list[dict[str, Any]] = []
        todo = list(candidates)
        while todo and self.left() > 10:
            records, status = self.child(stage, {"candidates": todo, "stop_on_match": True})
            done += records
            if any(r.get("ok") for r in records) or status == "skipped":
                break
            finished = len(records)
            if status != "ok" and finished < len(todo) and not (records and "error" in records[-1]):
                # the process died (trap, hang, crash) on a candidate that left no result line
                crashed = {"stage": stage, "defines": todo[finished], "ok": False, "error": f"process {status}"}
                done.append(crashed)
                self.log[-1]["records"].append(crashed)
                finished += 1
            if finished == 0:
                break  # nothing ran (e.g. no device): do not loop
            todo = todo[finished:]
        return done


def summarize(log: list[dict[str, Any]], chosen: dict[str, Any]) -> list[str]:
    rows = [("stage", "what", "result", "details")]
    for entry in log:
        stage = entry["stage"]
        if entry["status"] == "skipped":
            rows.append((stage, "-", "SKIPPED", entry.get("why", "out of time budget")))
            continue
        recs = entry.get("records", [])
        if not recs:
            tail = (entry.get("output_tail") or "")[-120:].replace("\n", " ")
            rows.append((stage, "-", entry["status"].upper(), tail))
            continue
        for r in recs:
            if stage == "compile":
                a = r.get("attributes", {})
                det = (f"regs {a.get('num_regs')} local {a.get('local_size_bytes')} B "
                       f"{r.get('compile_s', '?')} s" if r.get("ok") else r.get("error", "")[:100])
                rows.append((stage, r.get("variant", ""), "ok" if r.get("ok") else "FAIL", det))
            elif stage in ("mode1", "mode2"):
                what = ",".join(f"{k}={v}" for k, v in r.get("defines", {}).items()) or "defaults"
                det = (f"max err {r['max_abs_err']:.3g} tol {r['tol']:.3g} NaN {r['nan_count']}"
                       if "max_abs_err" in r else r.get("error", "")[:100])
                verdict = "MATCH" if r.get("ok") else ("WRONG" if "max_abs_err" in r else "ERROR")
                rows.append((stage, what, verdict, det))
            elif stage == "mode0":
                det = (f"max err {r.get('max_abs_err')} mismatches {r.get('mismatches')} NaN {r.get('nan_count')}"
                       if "error" not in r else r["error"][:100])
                rows.append((stage, r.get("case", ""), "PASS" if r.get("ok") else "FAIL", det))
            elif stage == "v07":
                if "max_abs_err" in r:
                    det = f"max err {r.get('max_abs_err')} mismatches {r.get('mismatches')} NaN {r.get('nan_count')}"
                elif "ptxas" in r or "attributes" in r:
                    a = r.get("attributes", {})
                    det = f"regs {a.get('num_regs')} local {a.get('local_size_bytes')} B " + " ".join(
                        f"ptxas spills {p.get('spill_stores')}/{p.get('spill_loads')} B" for p in r.get("ptxas", []))
                else:
                    det = r.get("error", "")[:100]
                rows.append((stage, r.get("case", ""), "PASS" if r.get("ok") else "FAIL", det))
        if entry["status"] not in ("ok",):
            rows.append((stage, "(process)", entry["status"].upper(), "see its output above"))
    widths = [max(len(str(row[i])) for row in rows) for i in range(3)]
    lines = [f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:<{widths[2]}}  {row[3]}" for row in rows]
    lines.insert(1, "-" * min(120, max(len(x) for x in lines)))
    lines.append(f"descriptor defines used for mode0: {json.dumps(chosen)}")
    return lines


def headline(log: list[dict[str, Any]]) -> dict[str, Any]:
    """The few facts the run is for: v06 (as configured) and v07 correct on the assignment's cases."""
    recs = [r for entry in log for r in entry.get("records", [])]
    out: dict[str, Any] = {}
    checks = {r["case"]: bool(r.get("ok")) for r in recs if r.get("stage") == "mode0" and not r.get("extra_defines")}
    if checks:
        out["v06_correct_on"] = checks
    v07_checks = {r["case"]: bool(r.get("ok")) for r in recs if r.get("stage") == "v07" and "max_abs_err" in r}
    if v07_checks:
        out["v07_correct_on"] = v07_checks
    return out


def parent(only: list[str], budget_s: float) -> int:
    runner = Runner(budget_s)
    chosen: dict[str, Any] = {**K_DEFAULT, **V_DEFAULT}
    verdict: dict[str, Any] = {}

    if "compile" in only:
        runner.child("compile", {"defines": {}})

    if "mode1" in only:
        recs = runner.debug_stage("mode1", [dict(K_DEFAULT)])
        if not any(r.get("ok") for r in recs):
            print("\n*** mode1 wrong with the default K descriptor: trying alternatives", flush=True)
            recs += runner.debug_stage("mode1", [dict(c) for c in K_ALTERNATIVES])
        match = next((r for r in recs if r.get("ok")), None)
        verdict["mode1_match"] = match["defines"] if match else None
        if match:
            chosen.update(match["defines"])

    if "mode2" in only:
        k_part = {key: chosen[key] for key in K_DEFAULT}
        recs = runner.debug_stage("mode2", [{**k_part, **V_DEFAULT}])
        if not any(r.get("ok") for r in recs):
            print("\n*** mode2 wrong with the default V descriptor: trying alternatives", flush=True)
            recs += runner.debug_stage("mode2", [{**k_part, **c} for c in V_ALTERNATIVES])
        match = next((r for r in recs if r.get("ok")), None)
        verdict["mode2_match"] = match["defines"] if match else None
        if match:
            chosen.update(match["defines"])

    if "mode0" in only:
        runner.child("mode0", {"defines": chosen})
    if "v07" in only:
        runner.child("v07", {})

    if runner.no_device:
        print("\n*** no CUDA device in the child processes: nothing was tested", flush=True)
    lines = summarize(runner.log, chosen)
    print("\n================ wgmma self-test summary ================", flush=True)
    for line in lines:
        print(line, flush=True)
    verdict.update(headline(runner.log))
    for key, val in verdict.items():
        print(f"{key}: {json.dumps(val)}", flush=True)
    print(f"total {time.monotonic() - runner.t0:.0f} s", flush=True)

    out_dir = os.environ.get("OUT")
    if out_dir:
        path = Path(out_dir) / "wgmma_selftest.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"chosen_defines": chosen, "verdict": verdict, "stages": runner.log,
                                    "summary": lines, "total_s": round(time.monotonic() - runner.t0, 1)},
                                   indent=1, default=str))
        print(f"wrote {path}", flush=True)
    return 2 if runner.no_device else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stage", choices=STAGES_ALL, help="run one stage in this process (what the parent spawns)")
    ap.add_argument("--payload", default="{}", help="JSON for --stage: defines / candidates")
    ap.add_argument("--only", default=",".join(STAGES_ALL), help="comma-separated stages for the full run")
    ap.add_argument("--budget", type=float, default=TOTAL_BUDGET_S, help="seconds for the whole run")
    args = ap.parse_args(argv)
    if args.stage:
        return run_child_stage(args.stage, json.loads(args.payload))
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    bad = [s for s in only if s not in STAGES_ALL]
    if bad:
        ap.error(f"unknown stage(s) {bad}; choose from {STAGES_ALL}")
    return parent(only, args.budget)


if __name__ == "__main__":
    raise SystemExit(main())
