"""What GPU this is, and its measured ceilings (copy bandwidth, matrix-unit peaks).

Ceilings are measured once per device and stored under ``logs/devices/<gpu>/``; later runs
reuse the newest record for the same device name unless ``--remeasure-ceilings`` is given.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timezone

from ..records import DeviceCeilings, DeviceInfo, gpu_slug


class NoGPU(RuntimeError):
    """Raised where CUDA is needed and not present; the CLI prints it as one line."""


def require_cuda() -> None:
    try:
        import torch
    except ImportError as e:
        raise NoGPU("PyTorch is not installed: install the GPU extra (pip install -e '.[gpu]') on a CUDA machine") from e
    if not torch.cuda.is_available():
        raise NoGPU("no CUDA device is visible (torch.cuda.is_available() is False): "
                    "`report run` needs an NVIDIA GPU; `report build` works without one")


def _smi(query: str) -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def _version(module: str) -> str | None:
    try:
        mod = __import__(module)
        return str(getattr(mod, "__version__", None))
    except Exception:  # a broken optional package must not stop a run
        return None


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_info() -> DeviceInfo:
    require_cuda()
    import torch

    p = torch.cuda.get_device_properties(0)
    sm_clock = _smi("clocks.max.sm")
    mem_clock = _smi("clocks.max.memory")
    return DeviceInfo(
        name=p.name, slug=gpu_slug(p.name), compute_capability=f"{p.major}.{p.minor}",
        sm_count=p.multi_processor_count, l2_bytes=int(getattr(p, "L2_cache_size", 0)),
        memory_bytes=int(p.total_memory),
        sm_clock_max_mhz=float(sm_clock) if sm_clock else None,
        memory_clock_max_mhz=float(mem_clock) if mem_clock else None,
        driver_version=_smi("driver_version"), cuda_version=torch.version.cuda,
        torch_version=torch.__version__, triton_version=_version("triton"), cupy_version=_version("cupy"),
        python_version=sys.version.split()[0], cpu=_cpu_name(), platform=platform.platform(),
    )


def _median_ms(fn: Callable[[], object], reps: int) -> float:
    """Median of ``reps`` event-timed calls after 3 warm-ups, through the harness's one timing loop
    (no L2 flush: a 2 GiB copy or an 8192³ product does not fit in L2 anyway)."""
    from .timing import CudaEventTimer, StoppingRule, benchmark

    rule = StoppingRule(min_reps=reps, max_reps=reps, warmup_reps=3, budget_s=600.0, wall_s=600.0)
    return benchmark(lambda rep: fn(), timer=CudaEventTimer(), rule=rule).median_ms


def measure_ceilings(info: DeviceInfo, *, copy_bytes: int = 2 << 30, matmul_n: int = 8192,
                     reps: int = 20) -> DeviceCeilings:
    """Device-to-device copy bandwidth and dense matmul peaks on random data.

    The copy counts bytes read plus bytes written. Matmul rates come from an n×n×n product
    through torch.matmul (cuBLAS); fp32 with TF32 off so it is the true fp32 rate.
    """
    import torch

    src = torch.randint(0, 255, (copy_bytes,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = _median_ms(lambda: dst.copy_(src), reps)
    copy_gbps = 2 * copy_bytes / (copy_ms / 1e3) / 1e9
    del src, dst

    rates: dict[str, float] = {}
    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16), ("fp32", torch.float32)):
            g = torch.Generator(device="cuda").manual_seed(0)
            a = torch.randn(matmul_n, matmul_n, device="cuda", dtype=dtype, generator=g)
            b = torch.randn(matmul_n, matmul_n, device="cuda", dtype=dtype, generator=g)
            c = torch.empty_like(a)
            ms = _median_ms(lambda: torch.matmul(a, b, out=c), reps if dtype != torch.float32 else max(5, reps // 4))
            rates[name] = 2 * matmul_n**3 / (ms / 1e3) / 1e12
            del a, b, c
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32
    torch.cuda.empty_cache()
    return DeviceCeilings(
        created_utc=datetime.now(timezone.utc), device=info, copy_gbps=copy_gbps, copy_bytes=copy_bytes,
        matmul_tflops=rates, matmul_n=matmul_n,
        notes=[f"median of {reps} timed calls after 3 warm-ups, CUDA events, random data",
               "copy: torch.Tensor.copy_ device to device, bytes read + written",
               "matmul: torch.matmul (cuBLAS), fp32 with TF32 disabled"],
    )
